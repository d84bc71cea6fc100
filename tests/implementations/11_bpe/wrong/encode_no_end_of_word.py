"""The word is cut into its characters without the end-of-word symbol: merges that end in `</w>` never apply.

expect-fail: ch11_bpe_encode
"""
# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    symbols = list(word)
    for a, b in merges:
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols
