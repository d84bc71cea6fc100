"""Learning stops as soon as the best pair occurs only once (Sennrich's script has such a minimum frequency, 2 by
default); the exercise merges it anyway, until `num_merges` or no pair is left.

expect-fail: ch11_learn_bpe_example, ch11_learn_bpe_rules
"""
# cell: ch11_learn_bpe_function
def learn_bpe(word_counts, num_merges):
    words = {word: list(word) + [END_OF_WORD] for word in word_counts}
    merges = []
    for _ in range(num_merges):
        pair_counts = collections.Counter()
        for word, symbols in words.items():
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += word_counts[word]
        if not pair_counts:
            break
        best = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))
        if pair_counts[best] < 2:
            break
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
