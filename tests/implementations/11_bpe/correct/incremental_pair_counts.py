"""Pair counts kept up to date instead of recounted: after each merge, only the words that contained the pair are
rewritten, their old pairs subtracted and their new pairs added (what fast BPE trainers do). Encoding rebuilds the
word with `zip` and a flag that skips the second half of a merged pair.
"""
# cell: ch11_learn_bpe_function
def learn_bpe(word_counts, num_merges):
    words = {word: list(word) + [END_OF_WORD] for word in word_counts}
    pair_counts = collections.Counter()
    for word, symbols in words.items():
        for pair in zip(symbols, symbols[1:]):
            pair_counts[pair] += word_counts[word]
    merges = []
    while len(merges) < num_merges:
        live = {pair: count for pair, count in pair_counts.items() if count > 0}
        if not live:
            break
        best = min(live, key=lambda pair: (-live[pair], pair))
        merges.append(best)
        for word, symbols in words.items():
            if best not in set(zip(symbols, symbols[1:])):
                continue
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] -= word_counts[word]
            new, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and symbols[i] == best[0] and symbols[i + 1] == best[1]:
                    new.append(best[0] + best[1])
                    i += 2
                else:
                    new.append(symbols[i])
                    i += 1
            words[word] = new
            for pair in zip(new, new[1:]):
                pair_counts[pair] += word_counts[word]
    return merges


# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    symbols = list(word) + [END_OF_WORD]
    for a, b in merges:
        out, skip = [], False
        for first, second in zip(symbols, symbols[1:] + [None]):
            if skip:
                skip = False
                continue
            if first == a and second == b:
                out.append(a + b)
                skip = True
            else:
                out.append(first)
        symbols = out
    return symbols
