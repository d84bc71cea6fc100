"""The end-of-word marker glued to the last character, `["l", "o", "w</w>"]` (as in the first version of Sennrich's
script) instead of being a symbol of its own: the pair ("t", "</w>") never exists.

expect-fail: ch11_learn_bpe_example, ch11_learn_bpe_rules, ch11_bpe_encode
"""
# cell: ch11_learn_bpe_function
def learn_bpe(word_counts, num_merges):
    words = {word: list(word[:-1]) + [word[-1] + END_OF_WORD] for word in word_counts}
    merges = []
    for _ in range(num_merges):
        pair_counts = collections.Counter()
        for word, symbols in words.items():
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += word_counts[word]
        if not pair_counts:
            break
        best = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))
        merges.append(best)
        for word, symbols in words.items():
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            words[word] = out
    return merges


# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    symbols = list(word[:-1]) + [word[-1] + END_OF_WORD] if word else [END_OF_WORD]
    for pair in merges:
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                out.append(symbols[i] + symbols[i + 1])
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols
