"""The guard's walk for classes that imitate tensors, in this process (no sandbox, no notebook): pure and fast.

The adversarial catalogue (tests/test_adversarial.py) attacks the whole runner; these tests pin one property of the
walk that a loaded machine once exposed there: a tensor subclass made by the notebook passed for a class the guard
already knew, because it was born at the address (so with the id) of a known class that had been freed.
"""

from __future__ import annotations

import gc

import torch

from autograder.runner.guard import Guard

IMITATES = "imitates tensors or arrays"


def _agreeable() -> type:
    """A tensor subclass whose comparisons all say 'equal' (the 'tensor-subclass' attack, in short)."""

    class Agreeable(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

    return Agreeable


def test_a_new_class_at_a_freed_known_class_address_is_still_new():
    """Before the fix the guard remembered ids only: deleting a known class and making the impersonator next gave it
    the freed block, its id was 'known', and `unfixable()` said nothing (measured: same id, no problem reported)."""

    class Throwaway(torch.Tensor):
        pass

    guard = Guard(enabled=True)
    freed = id(Throwaway)
    del Throwaway
    gc.collect()
    impersonator = _agreeable()
    problems = guard.unfixable()
    assert any(IMITATES in p and "Agreeable" in p for p in problems), (problems, id(impersonator) == freed)


def test_a_metaclass_cannot_claim_to_be_a_known_class():
    """Membership is by identity, not by the class's own __eq__/__hash__ (a metaclass decides those)."""
    guard = Guard(enabled=True)
    known = next(iter(guard.known_classes.values()))

    class Claims(type):
        def __eq__(cls, other):
            return True

        def __hash__(cls):
            return hash(known)

    class Impostor(torch.Tensor, metaclass=type("ClaimsTensorMeta", (Claims, type(torch.Tensor)), {})):
        pass

    assert any("Impostor" in p for p in guard.unfixable())


def test_classes_that_existed_before_the_snapshot_are_not_suspects():
    """The other half: nothing is reported when the notebook made nothing (every torch class counts as known)."""
    guard = Guard(enabled=True)
    assert not any(IMITATES in p for p in guard.unfixable())
