"""The cache as two lists (keys, values) indexed by layer; generate runs the prefill before the loop, collects
the new tokens in a list and concatenates once at the end (max_new_tokens=0 handled first); sample_next samples
among the top-k logits only and maps back with gather."""
# cell: ch10_kv_cache_class
class KVCache:
    def __init__(self):
        self.k_per_layer = []
        self.v_per_layer = []

    def update(self, layer_index, k, v):
        if layer_index == len(self.k_per_layer):
            self.k_per_layer.append(k)
            self.v_per_layer.append(v)
        else:
            self.k_per_layer[layer_index] = torch.cat([self.k_per_layer[layer_index], k], dim=2)
            self.v_per_layer[layer_index] = torch.cat([self.v_per_layer[layer_index], v], dim=2)
        return self.k_per_layer[layer_index], self.v_per_layer[layer_index]

    @property
    def length(self):
        return 0 if len(self.k_per_layer) == 0 else int(self.k_per_layer[0].shape[2])

# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    if max_new_tokens == 0:
        return prompt.clone()
    model.eval()
    pieces = [prompt]
    with torch.no_grad():
        if use_cache:
            cache = KVCache()
            logits = model(prompt, cache=cache, start_pos=0)
            for i in range(max_new_tokens):
                pieces.append(logits[:, -1].argmax(-1).view(-1, 1))
                if i + 1 < max_new_tokens:
                    logits = model(pieces[-1], cache=cache, start_pos=prompt.shape[1] + i)
        else:
            for i in range(max_new_tokens):
                logits = model(torch.cat(pieces, dim=1))
                pieces.append(logits[:, -1].argmax(-1).view(-1, 1))
    return torch.cat(pieces, dim=1)

# cell: ch10_sample_next_function
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    scaled = logits / temperature
    if top_k is not None:
        k = min(top_k, scaled.shape[-1])
        top_values, top_indices = scaled.topk(k, dim=-1)
        choice = torch.multinomial(torch.softmax(top_values, dim=-1), 1, generator=generator)
        return top_indices.gather(-1, choice).squeeze(-1)
    return torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=generator).squeeze(-1)
