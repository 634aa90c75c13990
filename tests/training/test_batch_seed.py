"""Training randomness keyed to the batch (user_dir/tasks/_batch_seed.py): the same batch draws
the same numbers wherever it runs; other batches, updates or --seed draw others."""

import torch

from user_dir.tasks._batch_seed import BatchSeededTrainStep, batch_seed


def test_batch_seed_depends_on_seed_update_and_ids_only():
    assert batch_seed(1, 5, [3, 9, 4]) == batch_seed(1, 5, [3, 9, 4])
    others = {batch_seed(2, 5, [3, 9, 4]), batch_seed(1, 6, [3, 9, 4]), batch_seed(1, 5, [3, 9, 5]),
              batch_seed(1, 5, [3, 9]), batch_seed(1, 5, None)}  # fmt: skip
    assert batch_seed(1, 5, [3, 9, 4]) not in others and len(others) == 5
    assert 0 <= batch_seed(1, 5, list(range(10_000))) < 2**31


class _Base:
    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        return torch.rand(3)  # stands for dropout / noise drawn inside a training step


class _Task(BatchSeededTrainStep, _Base):
    class cfg:
        seed = 1


def test_same_batch_same_draws_whatever_ran_before_and_global_state_kept():
    task, batch = _Task(), {"id": torch.tensor([7, 2])}
    torch.manual_seed(0)
    first = task.train_step(batch, None, None, None, update_num=3)
    after = torch.rand(1)
    torch.manual_seed(123)
    torch.rand(50)  # another sub-step, another rank: a different global random state
    assert torch.equal(task.train_step(batch, None, None, None, update_num=3), first)
    torch.manual_seed(0)
    task.train_step(batch, None, None, None, update_num=3)
    assert torch.equal(torch.rand(1), after)  # the global stream continues as if untouched
    assert not torch.equal(task.train_step({"id": torch.tensor([7, 3])}, None, None, None, update_num=3), first)
