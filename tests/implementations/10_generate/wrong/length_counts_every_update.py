"""length adds the new positions at every call of update, in every layer: with several layers it counts each
position once per layer. The one-layer self-check cannot see it.

expect-fail: ch10_cache_update, ch10_generate_steps
"""
# cell: ch10_kv_cache_class
class KVCache:
    def __init__(self):
        self.keys = {}
        self.values = {}
        self.length = 0

    def update(self, layer_index, k, v):
        self.length += k.shape[2]
        if layer_index in self.keys:
            k = torch.cat([self.keys[layer_index], k], dim=2)
            v = torch.cat([self.values[layer_index], v], dim=2)
        self.keys[layer_index] = k
        self.values[layer_index] = v
        return k, v
