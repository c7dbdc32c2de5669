# pytest tests that use a side stream: `python -m pytest` is how many
# people first run their GPU code. A fixture computes a result on a side
# stream; test_racy consumes it on the default stream without waiting for
# the side stream, test_fixed waits first. Selected with -k.
import pytest
import torch


@pytest.fixture
def side_result():
    x = torch.ones(1 << 20, device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = x * 3
    return side, y


def test_racy(side_result):
    _, y = side_result
    assert (y + 1).sum().item() == 4 * (1 << 20)


def test_fixed(side_result):
    side, y = side_result
    torch.cuda.current_stream().wait_stream(side)
    assert (y + 1).sum().item() == 4 * (1 << 20)
