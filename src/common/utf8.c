#include "common/utf8.h"

bool sw_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = sw_utf8_seq(p + i, n - i);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

size_t sw_utf8_trim(const char *s, size_t len)
{
    for (size_t back = 1; back <= 4 && back <= len; back++) {
        unsigned char c = (unsigned char)s[len - back];
        if ((c & 0xC0) == 0x80)
            continue;           /* a continuation byte: look further back */
        size_t want = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        return want > back ? len - back : len;
    }
    return len;
}

void sw_utf8_sanitize(char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t n = sw_utf8_seq((const unsigned char *)s + i, len - i);
        if (n == 0)
            s[i++] = '?';
        else
            i += n;
    }
}
