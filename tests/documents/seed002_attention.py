"""Seed 002's answers (test data only): every blank of the lab filled the way the book's chapter 3 fills it,
inside the functions and classes the skeleton names. The classes keep the notebook's given lines as they are
(the prints of MultiHeadAttention.forward excepted: the notebook prints shapes, which is demo output)."""
import torch
import torch.nn as nn


# 3.3.1 / 3.3.2
def softmax_naive(x):
    return torch.exp(x) / torch.exp(x).sum(dim=0)


def attention_scores(inputs):
    return inputs @ inputs.T


def context_vectors(inputs):
    attn_weights = torch.softmax(attention_scores(inputs), dim=-1)
    return attn_weights @ inputs


# 3.4.1: W_query = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False), ...
def qkv_weights(d_in, d_out):
    W_query = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    W_key = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    W_value = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    return W_query, W_key, W_value


def query_key_value(x, W_query, W_key, W_value):  # query_2 = x_2 @ W_query; queries = inputs @ W_query
    return x @ W_query, x @ W_key, x @ W_value


def dot_score(query, key):  # attn_score_22 = query_2.dot(keys_2)
    return query.dot(key)


def query_scores(query, keys):  # attn_scores_2 = query_2 @ keys.T
    return query @ keys.T


def scaled_softmax(attn_scores, d_k):  # torch.softmax(attn_scores_2 / d_k**0.5, dim=-1)
    return torch.softmax(attn_scores / d_k**0.5, dim=-1)


def weighted_sum(attn_weights, values):  # context_vec_2 = attn_weights_2 @ values
    return attn_weights @ values


# 3.5.1 / 3.5.2
def simple_mask(context_length):  # mask_simple = torch.tril(torch.ones(context_length, context_length))
    return torch.tril(torch.ones(context_length, context_length))


def apply_simple_mask(attn_weights, mask_simple):  # masked_simple = attn_weights*mask_simple
    return attn_weights * mask_simple


def renormalize(masked_simple):  # masked_simple / row_sums, row_sums = masked_simple.sum(dim=-1, keepdim=True)
    row_sums = masked_simple.sum(dim=-1, keepdim=True)
    return masked_simple / row_sums


def mask_future(attn_scores):  # masked = attn_scores.masked_fill(mask.bool(), -torch.inf)
    context_length = attn_scores.shape[0]
    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    return attn_scores.masked_fill(mask.bool(), -torch.inf)


def apply_dropout(x, p):  # dropout = torch.nn.Dropout(0.5); dropout(example)
    dropout = torch.nn.Dropout(p)
    return dropout(x)


# 3.4.2
class SelfAttention_v1(nn.Module):

    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key   = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value

        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec


class SelfAttention_v2(nn.Module):

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec


# 3.5.3
class CausalAttention(nn.Module):

    def __init__(self, d_in, d_out, context_length,
                 dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(
            self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = attn_weights @ values
        return context_vec


# 3.6.1
class MultiHeadAttentionWrapper(nn.Module):

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
             for _ in range(num_heads)]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


# 3.6.2
class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert (d_out % num_heads == 0), "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape

        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)

        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]

        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)

        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)

        return context_vec
