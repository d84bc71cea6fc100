"""Lower-cases every word, in learning and in encoding (a normalisation some tokenizers do, but not this one): "The"
and "the" are counted as one word, and "The" comes out as "the"'s symbols. Right on every corpus without capital
letters.

expect-fail: ch11_learn_bpe_rules, ch11_bpe_encode
"""
# cell: ch11_learn_bpe_function
def merge_pair(symbols, pair):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def learn_bpe(word_counts, num_merges):
    counts = collections.Counter()
    for word, count in word_counts.items():
        counts[word.lower()] += count                      # the mistake: "The" and "the" become one word
    words = {word: list(word) + [END_OF_WORD] for word in counts}
    merges = []
    while len(merges) < num_merges:
        pairs = collections.Counter()
        for word, symbols in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += counts[word]
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        words = {word: merge_pair(symbols, best) for word, symbols in words.items()}
    return merges


# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    symbols = list(word.lower()) + [END_OF_WORD]            # the mistake again
    for pair in merges:
        symbols = merge_pair(symbols, tuple(pair))
    return symbols
