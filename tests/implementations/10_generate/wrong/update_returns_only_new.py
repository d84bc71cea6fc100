"""update stores the concatenation but returns only the new keys and values: each new token attends to
itself alone.

expect-fail: ch10_cache_update, ch10_generate_matches_no_cache, ch10_generate_details
"""
# cell: ch10_kv_cache_class
class KVCache:
    def __init__(self):
        self.keys = {}
        self.values = {}

    def update(self, layer_index, k, v):
        if layer_index in self.keys:
            self.keys[layer_index] = torch.cat([self.keys[layer_index], k], dim=2)
            self.values[layer_index] = torch.cat([self.values[layer_index], v], dim=2)
        else:
            self.keys[layer_index] = k
            self.values[layer_index] = v
        return k, v

    @property
    def length(self):
        if 0 not in self.keys:
            return 0
        return self.keys[0].shape[2]
