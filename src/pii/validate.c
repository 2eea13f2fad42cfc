/* Checksum and syntax validators; see validate.h. */
#include "pii/validate.h"

#include <stdint.h>
#include <string.h>

bool sw_pii_luhn(const char *s, size_t len)
{
    unsigned sum = 0, n = 0;
    for (size_t i = len; i-- > 0;) {
        if (s[i] < '0' || s[i] > '9')
            continue;
        unsigned d = (unsigned)(s[i] - '0');
        if (n++ & 1) {
            d *= 2;
            if (d > 9)
                d -= 9;
        }
        sum += d;
    }
    return n >= 2 && sum % 10 == 0;
}

static int alnum_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 10;
    return -1;
}

static unsigned mod97_feed(unsigned r, int v)
{
    return v >= 10 ? (r * 100 + (unsigned)v) % 97 : (r * 10 + (unsigned)v) % 97;
}

bool sw_pii_mod97(const char *s, size_t len)
{
    int head[4], nh = 0, n = 0;
    unsigned r = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ' || s[i] == '-')
            continue;
        int v = alnum_value(s[i]);
        if (v < 0)
            return false;
        if (nh < 4)
            head[nh++] = v;
        else
            r = mod97_feed(r, v);
        n++;
    }
    if (n < 5)
        return false;
    for (int i = 0; i < 4; i++)
        r = mod97_feed(r, head[i]);
    return r == 1;
}

bool sw_pii_elfproef(const char *s, size_t len)
{
    int d[9], n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            continue;
        if (n == 9)
            return false;
        d[n++] = s[i] - '0';
    }
    if (n != 9)
        return false;
    long sum = 0, any = 0;
    for (int i = 0; i < 8; i++) {
        sum += (long)(9 - i) * d[i];
        any |= d[i];
    }
    sum -= d[8];
    return (any | d[8]) && sum % 11 == 0;
}

/* SWIFT IBAN registry (release 2024), country -> total length. */
static const struct { char cc[3]; unsigned char len; } iban_lengths[] = {
    {"AD", 24}, {"AE", 23}, {"AL", 28}, {"AT", 20}, {"AZ", 28}, {"BA", 20}, {"BE", 16},
    {"BG", 22}, {"BH", 22}, {"BI", 27}, {"BR", 29}, {"BY", 28}, {"CH", 21}, {"CR", 22},
    {"CY", 28}, {"CZ", 24}, {"DE", 22}, {"DJ", 27}, {"DK", 18}, {"DO", 28}, {"EE", 20},
    {"EG", 29}, {"ES", 24}, {"FI", 18}, {"FK", 18}, {"FO", 18}, {"FR", 27}, {"GB", 22},
    {"GE", 22}, {"GI", 23}, {"GL", 18}, {"GR", 27}, {"GT", 28}, {"HR", 21}, {"HU", 28},
    {"IE", 22}, {"IL", 23}, {"IQ", 23}, {"IS", 26}, {"IT", 27}, {"JO", 30}, {"KW", 30},
    {"KZ", 20}, {"LB", 28}, {"LC", 32}, {"LI", 21}, {"LT", 20}, {"LU", 20}, {"LV", 21},
    {"LY", 25}, {"MC", 27}, {"MD", 24}, {"ME", 22}, {"MK", 19}, {"MN", 20}, {"MR", 27},
    {"MT", 31}, {"MU", 30}, {"NI", 28}, {"NL", 18}, {"NO", 15}, {"OM", 23}, {"PK", 24},
    {"PL", 28}, {"PS", 29}, {"PT", 25}, {"QA", 29}, {"RO", 24}, {"RS", 22}, {"RU", 33},
    {"SA", 24}, {"SC", 31}, {"SD", 18}, {"SE", 24}, {"SI", 19}, {"SK", 24}, {"SM", 27},
    {"SO", 23}, {"ST", 25}, {"SV", 28}, {"TL", 23}, {"TN", 24}, {"TR", 26}, {"UA", 29},
    {"VA", 22}, {"VG", 24}, {"XK", 20}, {"YE", 30},
};

int sw_pii_iban_len(char c0, char c1)
{
    for (size_t i = 0; i < sizeof iban_lengths / sizeof iban_lengths[0]; i++)
        if (iban_lengths[i].cc[0] == c0 && iban_lengths[i].cc[1] == c1)
            return iban_lengths[i].len;
    return 0;
}

bool sw_pii_ssn_ok(const char *s, size_t len)
{
    char d[9];
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            if (n == 9)
                return false;
            d[n++] = s[i];
        } else if (s[i] != '-' && s[i] != ' ') {
            return false;
        }
    }
    if (n != 9)
        return false;
    if (!memcmp(d, "000", 3) || !memcmp(d, "666", 3) || d[0] == '9')
        return false;
    if (!memcmp(d + 3, "00", 2) || !memcmp(d + 5, "0000", 4))
        return false;
    if (!memcmp(d, "078051120", 9) || !memcmp(d, "219099999", 9))
        return false;
    return true;
}

bool sw_pii_ipv4_ok(const char *s, size_t len)
{
    size_t i = 0;
    for (int oct = 0; oct < 4; oct++) {
        if (oct) {
            if (i >= len || s[i] != '.')
                return false;
            i++;
        }
        size_t st = i;
        unsigned v = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9' && i - st < 4)
            v = v * 10 + (unsigned)(s[i++] - '0');
        size_t nd = i - st;
        if (nd == 0 || nd > 3 || v > 255 || (nd == 2 && s[st] == '0'))
            return false;       /* zero-padded octets have three digits: "010.001.002.003" */
    }
    return i == len;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* RFC 4291 section 2.2: up to 8 groups of 1-4 hex digits, at most one "::",
 * optionally ending with a dotted quad worth two groups. */
bool sw_pii_ipv6_ok(const char *s, size_t len)
{
    int groups = 0;
    bool dbl = false;
    size_t i = 0;
    if (len < 2 || len > 45)
        return false;
    if (s[0] == ':') {
        if (s[1] != ':')
            return false;
        dbl = true;
        i = 2;
        if (i == len)
            return true;
    }
    for (;;) {
        size_t st = i;
        while (i < len && hexval(s[i]) >= 0 && i - st < 5)
            i++;
        size_t nd = i - st;
        if (i < len && s[i] == '.') {
            /* trailing dotted quad */
            if (groups > 6 || !sw_pii_ipv4_ok(s + st, len - st))
                return false;
            groups += 2;
            break;
        }
        if (nd == 0 || nd > 4)
            return false;
        groups++;
        if (i == len)
            break;
        if (s[i] != ':')
            return false;
        i++;
        if (i < len && s[i] == ':') {
            if (dbl)
                return false;
            dbl = true;
            i++;
            if (i == len)
                break;
        } else if (i == len) {
            return false;
        }
        if (groups > 8)
            return false;
    }
    return dbl ? groups <= 7 : groups == 8;
}
