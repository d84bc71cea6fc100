"""Encoding by the longest known piece first (greedy longest match from the left, as WordPiece does) instead of
replaying the merges in the order they were learned: `"abc"` with merges [("b", "c"), ("a", "b")] becomes
`["ab", "c", "</w>"]`.

expect-fail: ch11_bpe_encode
"""
# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    known = {a + b for a, b in merges}
    symbols = list(word) + [END_OF_WORD]
    pieces, start = [], 0
    while start < len(symbols):
        end = len(symbols)
        while end > start + 1 and "".join(symbols[start:end]) not in known:
            end -= 1
        pieces.append("".join(symbols[start:end]))
        start = end
    return pieces
