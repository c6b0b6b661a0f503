# Student submission (example): the parts are right, but the block forgets the residual connection around
# the attention, and the model from the notes was built without batch_first=True.
# Expected: loses points on TransformerBlock and nn_transformer only.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, causal=False):
        b, n, d = x.shape
        q = self.W_q(x).view(b, n, self.n_heads, self.d_head).transpose(1, 2)
        k = self.W_k(x).view(b, n, self.n_heads, self.d_head).transpose(1, 2)
        v = self.W_v(x).view(b, n, self.n_heads, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if causal:
            mask = torch.triu(torch.ones(n, n, device=x.device), diagonal=1).bool()
            scores = scores.masked_fill(mask, -torch.inf)
        attn = self.dropout(F.softmax(scores, dim=-1))
        return self.W_o((attn @ v).transpose(1, 2).contiguous().view(b, n, d))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False, use_ffn=True, use_norm=True,
                 use_residual=True):
        super().__init__()
        self.norm_first = norm_first
        self.switches = (use_ffn, use_norm, use_residual)
        self.attn = MultiHeadSelfAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def exercise3(self, x, causal):  # written later, for the exercise, from the notes: right
        use_ffn, use_norm, use_residual = self.switches
        def part(z, f, norm):
            keep = z if use_residual else 0
            if not use_norm:
                return keep + f(z)
            return keep + f(norm(z)) if self.norm_first else norm(keep + f(z))
        x = part(x, lambda z: self.dropout1(self.attn(z, causal)), self.norm1)
        return part(x, lambda z: self.dropout2(self.ff(z)), self.norm2) if use_ffn else x

    def forward(self, x, causal=False):
        if not all(self.switches):
            return self.exercise3(x, causal)
        if self.norm_first:
            x = self.dropout1(self.attn(self.norm1(x), causal))  # residual forgotten
            x = x + self.dropout2(self.ff(self.norm2(x)))
        else:
            x = self.norm1(self.dropout1(self.attn(x, causal)))  # residual forgotten
            x = self.norm2(x + self.dropout2(self.ff(x)))
        return x


def build_transformer():
    return nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32)


def transformer_output_shape():
    out = build_transformer()(torch.rand(2, 5, 16), torch.rand(2, 5, 16))
    return tuple(out.shape)


def make_transformer(d_model, nhead, num_layers, dim_feedforward):
    return nn.Transformer(d_model=d_model, nhead=nhead, num_encoder_layers=num_layers,
                          num_decoder_layers=num_layers, dim_feedforward=dim_feedforward, batch_first=True)


def transformer_shape(batch, src_len, tgt_len, d_model, nhead, num_layers):
    model = make_transformer(d_model, nhead, num_layers, 2 * d_model)
    return tuple(model(torch.rand(batch, src_len, d_model), torch.rand(batch, tgt_len, d_model)).shape)
