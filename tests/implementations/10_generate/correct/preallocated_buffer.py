"""The cache as preallocated buffers with a length counter, doubled when full (no torch.cat per step); update
returns views of the filled part. generate as a while loop over the sequence length."""
# cell: ch10_kv_cache_class
class KVCache:
    def __init__(self, capacity=16):
        self.capacity = capacity
        self.k_buf, self.v_buf = [], []   # one buffer per layer
        self.filled = []                  # positions filled, per layer

    def _grow(self, layer, needed):
        k_old, v_old = self.k_buf[layer], self.v_buf[layer]
        size = k_old.shape[2]
        while size < needed:
            size *= 2
        shape = (k_old.shape[0], k_old.shape[1], size, k_old.shape[3])
        k_new = k_old.new_zeros(shape)
        v_new = v_old.new_zeros((v_old.shape[0], v_old.shape[1], size, v_old.shape[3]))
        k_new[:, :, : self.filled[layer]] = k_old[:, :, : self.filled[layer]]
        v_new[:, :, : self.filled[layer]] = v_old[:, :, : self.filled[layer]]
        self.k_buf[layer], self.v_buf[layer] = k_new, v_new

    def update(self, layer_index, k, v):
        if layer_index == len(self.k_buf):
            b, h, _, d = k.shape
            self.k_buf.append(k.new_zeros((b, h, self.capacity, d)))
            self.v_buf.append(v.new_zeros((b, h, self.capacity, v.shape[3])))
            self.filled.append(0)
        start = self.filled[layer_index]
        end = start + k.shape[2]
        if end > self.k_buf[layer_index].shape[2]:
            self._grow(layer_index, end)
        self.k_buf[layer_index][:, :, start:end] = k
        self.v_buf[layer_index][:, :, start:end] = v
        self.filled[layer_index] = end
        return self.k_buf[layer_index][:, :, :end], self.v_buf[layer_index][:, :, :end]

    @property
    def length(self):
        return self.filled[0] if self.filled else 0

# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.eval()
    target = prompt.shape[1] + max_new_tokens
    seq = prompt.clone()
    cache = KVCache() if use_cache else None
    with torch.no_grad():
        while seq.shape[1] < target:
            if cache is None:
                logits = model(seq, start_pos=0)
            else:
                done = cache.length
                logits = model(seq[:, done:], cache=cache, start_pos=done)
            seq = torch.cat([seq, logits[:, -1].argmax(dim=-1).unsqueeze(-1)], dim=-1)
    return seq
