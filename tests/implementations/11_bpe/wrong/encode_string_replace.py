"""Encoding on the text of the symbols joined by spaces, with `str.replace`: after ("b", "a"), the text `"ba a </w>"`
still contains `"a a"`, and ("a", "a") glues part of `ba` to the next `a`.

expect-fail: ch11_bpe_encode
"""
# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    text = " ".join(list(word) + [END_OF_WORD])
    for a, b in merges:
        text = text.replace(a + " " + b, a + b)
    return text.split()
