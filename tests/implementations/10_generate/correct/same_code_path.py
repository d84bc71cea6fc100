"""One code path for both modes: without the cache the "new tokens" are the whole sequence and start_pos is 0;
with it they are what the cache does not hold yet. The cache stores a (k, v) pair per layer in a list.
Sampling by inverse CDF on renormalised probabilities."""
# cell: ch10_kv_cache_class
class KVCache:
    def __init__(self):
        self.layers = []

    def update(self, layer_index, k, v):
        if layer_index < len(self.layers):
            old_k, old_v = self.layers[layer_index]
            k, v = torch.cat((old_k, k), 2), torch.cat((old_v, v), 2)
            self.layers[layer_index] = (k, v)
        else:
            self.layers.append((k, v))
        return k, v

    @property
    def length(self):
        return self.layers[0][0].size(2) if self.layers else 0

# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.train(False)
    cache = KVCache() if use_cache else None
    tokens = prompt
    with torch.inference_mode():
        for _ in range(max_new_tokens):
            start = cache.length if cache is not None else 0
            logits = model(tokens[:, start:], cache=cache, start_pos=start)
            tokens = torch.cat((tokens, logits[:, -1:].argmax(-1)), 1)
    return tokens

# cell: ch10_sample_next_function
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_k is not None and top_k < probs.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        probs = probs * (logits >= kth)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    u = torch.rand(probs.shape[0], 1, generator=generator, device=probs.device, dtype=probs.dtype)
    index = torch.searchsorted(probs.cumsum(dim=-1), u).squeeze(-1)
    return index.clamp(max=probs.shape[-1] - 1)
