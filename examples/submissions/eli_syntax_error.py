import torch

class SelfAttention_v1(torch.nn.Module)
    pass
