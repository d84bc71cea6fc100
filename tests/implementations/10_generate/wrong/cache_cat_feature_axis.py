"""The cache concatenates along the last axis (dim=-1, the features of each head): "append to the end".

expect-fail: ch10_cache_update, ch10_generate_matches_no_cache, ch10_generate_steps, ch10_generate_details
"""
# cell: ch10_kv_cache_class
class KVCache:
    def __init__(self):
        self.keys = {}
        self.values = {}

    def update(self, layer_index, k, v):
        if layer_index in self.keys:
            k = torch.cat([self.keys[layer_index], k], dim=-1)
            v = torch.cat([self.values[layer_index], v], dim=-1)
        self.keys[layer_index] = k
        self.values[layer_index] = v
        return k, v

    @property
    def length(self):
        if 0 not in self.keys:
            return 0
        return self.keys[0].shape[-2]
