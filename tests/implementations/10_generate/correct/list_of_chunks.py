"""The cache keeps a list of chunks per layer and concatenates lazily, in update's return value; generate
writes the tokens into a preallocated output tensor; sampling with the Gumbel-max trick."""
# cell: ch10_kv_cache_class
class KVCache:
    def __init__(self):
        self.chunks = []   # per layer: list of (k, v) pieces

    def update(self, layer_index, k, v):
        while len(self.chunks) <= layer_index:
            self.chunks.append([])
        self.chunks[layer_index].append((k, v))
        keys = torch.cat([piece[0] for piece in self.chunks[layer_index]], dim=-2)
        values = torch.cat([piece[1] for piece in self.chunks[layer_index]], dim=-2)
        return keys, values

    @property
    def length(self):
        if not self.chunks:
            return 0
        return sum(piece[0].shape[-2] for piece in self.chunks[0])

# cell: ch10_generate_function
@torch.no_grad()
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.eval()
    batch, start = prompt.shape
    out = torch.empty(batch, start + max_new_tokens, dtype=prompt.dtype, device=prompt.device)
    out[:, :start] = prompt
    cache = KVCache() if use_cache else None
    for i in range(start, start + max_new_tokens):
        if use_cache and i > start:
            logits = model(out[:, i - 1:i], cache=cache, start_pos=i - 1)
        else:
            logits = model(out[:, :i], cache=cache, start_pos=0)
        out[:, i] = logits[:, -1].argmax(dim=-1)
    return out

# cell: ch10_sample_next_function
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        values, _ = torch.sort(z, dim=-1, descending=True)
        z = torch.where(z >= values[:, top_k - 1:top_k], z, torch.full_like(z, float("-inf")))
    u = torch.rand(z.shape, generator=generator, device=z.device, dtype=z.dtype).clamp_min(1e-12)
    gumbel = -torch.log(-torch.log(u))
    return (z + gumbel).argmax(dim=-1)
