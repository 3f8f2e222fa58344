"""The float writer the golden scripts share: float32 values as the shortest decimals that read
back to the same float32, so the C++ tests parse them exactly."""
import numpy as np
import torch


def f32_list(t):
    """float32 values as Python floats whose repr is the shortest decimal that reads back to the
    same float32 (numpy's float32 str); checked."""
    a = np.ascontiguousarray(t.detach().cpu().numpy() if torch.is_tensor(t) else t, np.float32).ravel()
    out = [float(str(v)) for v in a]
    assert np.array_equal(np.asarray(out, np.float32), a)
    return out
