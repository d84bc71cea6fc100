"""Each merge applied at its first occurrence only (`list.index` finds one): `"banana"` with the merge ("a", "n")
becomes `["b", "an", "a", "n", "a", "</w>"]`.

expect-fail: ch11_bpe_encode
"""
# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    symbols = list(word) + [END_OF_WORD]
    for a, b in merges:
        for i in range(len(symbols) - 1):
            if symbols[i] == a and symbols[i + 1] == b:
                symbols[i : i + 2] = [a + b]
                break
    return symbols
