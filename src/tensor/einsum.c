#include "einsum.h"

#include <stdio.h>
#include <string.h>

#define MPS_EINSUM_WHY(...) (snprintf(why, size, __VA_ARGS__), false)

/* The label of letter ch, or -1. */
static int mps_einsum_letter(char ch)
{
    return ch >= 'a' && ch <= 'z' ? ch - 'a' : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A' : -1;
}

static char mps_einsum_char(int l)
{
    return (char)(l < 26 ? 'a' + l : 'A' + l - 26);
}

/* One term (an input's or the output's), spaces removed: its letters in
   t[0..*n) with -2 where the ellipsis stands. */
static bool mps_einsum_term(const char *s, size_t len, signed char *t, int *n, char *why, size_t size)
{
    bool ellipsis = false;
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        if (*n >= MPS_MAX_DIMS)
            return MPS_EINSUM_WHY("a term of more than %d dims", MPS_MAX_DIMS);
        if (s[i] == '.') {
            if (ellipsis || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return MPS_EINSUM_WHY("a '.' that is not one ellipsis '...'");
            ellipsis = true, i += 2, t[(*n)++] = -2;
            continue;
        }
        int l = mps_einsum_letter(s[i]);
        if (l < 0)
            return MPS_EINSUM_WHY("'%c' is not an index letter", s[i]);
        t[(*n)++] = (signed char)l;
    }
    return true;
}

bool mps_einsum_parse(const char *eq, int n_in, const struct mps_shape *const *in, struct mps_einsum *e, char *why,
                      size_t size)
{
    char s[256];
    size_t len = 0;
    for (const char *p = eq; *p; p++)
        if (*p != ' ' && len + 1 < sizeof s)
            s[len++] = *p;
    s[len] = '\0';
    memset(e, 0, sizeof *e);
    if (n_in < 1 || n_in > MPS_EINSUM_MAX_IN)
        return MPS_EINSUM_WHY("%d inputs; 1 to %d are supported", n_in, MPS_EINSUM_MAX_IN);
    const char *arrow = strstr(s, "->");
    size_t lhs = arrow ? (size_t)(arrow - s) : len;
    int64_t letter_size[52];
    int uses[52] = {0}, ell = 0; /* ell: the ellipsis' dims, the most any input has */
    for (int l = 0; l < 52; l++)
        letter_size[l] = -1;
    signed char terms[MPS_EINSUM_MAX_IN][MPS_MAX_DIMS];
    int nt[MPS_EINSUM_MAX_IN], k = 0;
    for (size_t start = 0; start <= lhs; k++) {
        size_t end = start;
        while (end < lhs && s[end] != ',')
            end++;
        if (k >= n_in)
            return MPS_EINSUM_WHY("more terms than its %d inputs", n_in);
        if (!mps_einsum_term(s + start, end - start, terms[k], &nt[k], why, size))
            return false;
        start = end + 1;
    }
    if (k != n_in)
        return MPS_EINSUM_WHY("%d terms for %d inputs", k, n_in);
    for (k = 0; k < n_in; k++) { /* the letters' sizes and the ellipsis' rank */
        bool has_ell = memchr(terms[k], -2, (size_t)nt[k]) != NULL;
        int letters = nt[k] - has_ell, rank = in[k]->ndim;
        if (has_ell ? rank < letters : rank != letters)
            return MPS_EINSUM_WHY("input %d has %d dims for the term's %d letters%s", k, rank, letters,
                                  has_ell ? " and more" : "");
        int en = rank - letters, d = 0;
        ell = en > ell ? en : ell;
        for (int i = 0; i < nt[k]; i++) {
            if (terms[k][i] == -2) {
                d += en;
                continue;
            }
            int l = terms[k][i];
            if (letter_size[l] >= 0 && letter_size[l] != in[k]->dim[d])
                return MPS_EINSUM_WHY("'%c' is %lld in one place and %lld in another", mps_einsum_char(l),
                                      (long long)letter_size[l], (long long)in[k]->dim[d]);
            letter_size[l] = in[k]->dim[d++];
            uses[l]++;
        }
    }
    /* labels: the ellipsis' dims first (0 .. ell-1, right-aligned across inputs), then the letters */
    int map[52];
    e->n_in = n_in, e->n_labels = ell;
    for (int i = 0; i < ell; i++)
        e->size[i] = 1;
    for (int l = 0; l < 52; l++)
        if (letter_size[l] >= 0) {
            map[l] = e->n_labels;
            e->size[e->n_labels++] = letter_size[l];
        }
    for (k = 0; k < n_in; k++) {
        int en = in[k]->ndim - (nt[k] - (memchr(terms[k], -2, (size_t)nt[k]) != NULL)), d = 0;
        for (int i = 0; i < nt[k]; i++) {
            if (terms[k][i] != -2) {
                e->label[k][d++] = (signed char)map[terms[k][i]];
                continue;
            }
            for (int j = 0; j < en; j++, d++) {
                int lab = ell - en + j;
                int64_t dim = in[k]->dim[d];
                if (e->size[lab] != 1 && dim != 1 && dim != e->size[lab])
                    return MPS_EINSUM_WHY("the ellipsis' dims %lld and %lld do not broadcast", (long long)dim,
                                          (long long)e->size[lab]);
                if (dim != 1)
                    e->size[lab] = dim;
                e->label[k][d] = (signed char)lab;
            }
        }
        e->ndim[k] = d;
    }
    if (arrow) { /* the output as written */
        signed char t[MPS_MAX_DIMS];
        int n;
        if (!mps_einsum_term(arrow + 2, strlen(arrow + 2), t, &n, why, size))
            return false;
        for (int i = 0; i < n; i++) {
            if (t[i] == -2) {
                for (int j = 0; j < ell && e->out_ndim < MPS_MAX_DIMS; j++)
                    e->out[e->out_ndim++] = (signed char)j;
                continue;
            }
            if (letter_size[t[i]] < 0)
                return MPS_EINSUM_WHY("the output's '%c' is in no input", mps_einsum_char(t[i]));
            for (int j = 0; j < e->out_ndim; j++)
                if (e->out[j] == map[t[i]])
                    return MPS_EINSUM_WHY("the output names a letter twice");
            if (e->out_ndim >= MPS_MAX_DIMS)
                return MPS_EINSUM_WHY("an output of more than %d dims", MPS_MAX_DIMS);
            e->out[e->out_ndim++] = (signed char)map[t[i]];
        }
    } else { /* numpy's implicit output */
        for (int j = 0; j < ell; j++)
            e->out[e->out_ndim++] = (signed char)j;
        for (int l = 0; l < 52; l++)
            if (uses[l] == 1) {
                if (e->out_ndim >= MPS_MAX_DIMS)
                    return MPS_EINSUM_WHY("an output of more than %d dims", MPS_MAX_DIMS);
                e->out[e->out_ndim++] = (signed char)map[l];
            }
    }
    for (int j = 0; j < e->out_ndim; j++)
        e->in_out[e->out[j]] = true;
    return true;
}
