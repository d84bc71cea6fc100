r"""Sennrich's regular-expression merge without `re.escape`: the pair's symbols are pasted into the pattern as they
are, so a `.` matches any character, `+` and `*` repeat what comes before, and `(` or `[` make the pattern invalid.
Right on every corpus of letters only.

expect-fail: ch11_learn_bpe_rules, ch11_bpe_encode
"""
# cell: ch11_learn_bpe_function
import re


def merge_text(pair, text):
    """Merge the pair in a word written as its symbols joined by spaces."""
    pattern = re.compile(r"(?<!\S)" + " ".join(pair) + r"(?!\S)")   # the mistake: re.escape(" ".join(pair))
    return pattern.sub("".join(pair), text)


def learn_bpe(word_counts, num_merges):
    vocab = {" ".join(list(word) + [END_OF_WORD]): count for word, count in word_counts.items()}
    merges = []
    for _ in range(num_merges):
        stats = collections.defaultdict(int)
        for text, count in vocab.items():
            symbols = text.split()
            for i in range(len(symbols) - 1):
                stats[symbols[i], symbols[i + 1]] += count
        if not stats:
            break
        best = min(stats, key=lambda pair: (-stats[pair], pair))
        vocab = {merge_text(best, text): count for text, count in vocab.items()}
        merges.append(best)
    return merges


# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    text = " ".join(list(word) + [END_OF_WORD])
    for pair in merges:
        text = merge_text(pair, text)
    return text.split()
