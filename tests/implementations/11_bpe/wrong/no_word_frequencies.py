"""Pairs counted once per distinct word: the counts of `word_counts` are never used, so a pair of a frequent word
weighs as little as a pair of a word seen once.

expect-fail: ch11_learn_bpe_example, ch11_learn_bpe_rules
"""
# cell: ch11_learn_bpe_function
def learn_bpe(word_counts, num_merges):
    words = {word: list(word) + [END_OF_WORD] for word in word_counts}
    merges = []
    for _ in range(num_merges):
        pair_counts = collections.Counter()
        for symbols in words.values():
            pair_counts.update(zip(symbols, symbols[1:]))
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
