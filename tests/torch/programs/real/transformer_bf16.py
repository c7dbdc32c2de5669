# A transformer encoder layer in bfloat16 autocast (scaled_dot_product_attention
# with its fused attention kernels, layer norm, GELU), AdamW with fused=True,
# gradient clipping. Correct: must run clean.
import torch
import torch.nn as nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                   batch_first=True, activation="gelu").cuda()
opt = torch.optim.AdamW(layer.parameters(), lr=1e-3, fused=True)
x = torch.randn(8, 64, 128, device="cuda")
for _ in range(10):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = layer(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(layer.parameters(), 1.0)
    opt.step()
print("loss %.4f" % loss.item())
