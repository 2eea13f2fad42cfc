/* Unit tests of detection on text as people write it (src/pii/view.c and the
 * digit, card, phone, IBAN, BSN, SSN, IPv4 and e-mail refiners): decimal
 * digits of every script, every dash as a separator, numbers broken over
 * two lines or split by tabs, the card and phone groupings in use,
 * internationalised and encoded e-mail addresses masked whole, zero-padded
 * IPv4 addresses; and the hard negatives next to each (dates, versions,
 * ranges, amounts and order numbers, in the same scripts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/err.h"
#include "pii/map.h"
#include "pii/pii.h"

static struct sw_pii_engine *E;

static int setup(void **state)
{
    (void)state;
    char err[256];
    int rc = sw_pii_engine_new(NULL, 0, &E, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    sw_pii_engine_free(E);
    return 0;
}

struct found {
    const char *text;
    char out[2048];
};

static int on_span(void *ud, const struct sw_pii_span *sp)
{
    struct found *f = ud;
    size_t l = strlen(f->out);
    snprintf(f->out + l, sizeof f->out - l, "%s%s:%.*s", l ? "|" : "",
             sw_pii_type_name(E, sp->type), (int)sp->len, f->text + sp->start);
    return SW_OK;
}

/* "type:bytes|type:bytes" of the spans found, bytes as in the input. */
static const char *find(const char *text, int json)
{
    static struct found f;
    f.text = text;
    f.out[0] = '\0';
    int rc = json ? sw_pii_scan_json_text(E, text, strlen(text), on_span, &f)
                  : sw_pii_scan_text(E, text, strlen(text), on_span, &f);
    assert_int_equal(rc, SW_OK);
    return f.out;
}

struct tcase {
    const char *text;
    const char *want;       /* "" for nothing */
};

static void run_table(const struct tcase *c, size_t n, int json)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const char *got = find(c[i].text, json);
        if (strcmp(got, c[i].want)) {
            print_error("case %zu \"%s\":\n    want \"%s\"\n    got  \"%s\"\n", i, c[i].text,
                        c[i].want, got);
            bad++;
        }
    }
    if (bad)
        fail_msg("%d of %zu cases wrong", bad, n);
}

#define RUN(t, json) run_table(t, sizeof t / sizeof t[0], json)

/* Decimal digits of other scripts (Unicode category Nd) read as the digits
 * they are: Arabic-Indic, Extended Arabic-Indic (Persian), Devanagari,
 * Bengali, Thai, and mixed with ASCII. */
static void test_script_digits(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"بطاقتي ٤١١١ ١١١١ ١١١١ ١١١١ شكرا",
         "card:٤١١١ ١١١١ ١١١١ ١١١١"},
        {"شماره من +۳۱ ۶ ۱۲۳۴۵۶۷۸ است", "phone:+۳۱ ۶ ۱۲۳۴۵۶۷۸"},
        {"मेरा नंबर +९१ ९८७६५ ४३२१० है", "phone:+९१ ९८७६५ ४३२१०"},
        {"বিএসএন নয়, BSN ১১১২২২৩৩৩", "bsn:১১১২২২৩৩৩"},
        {"BSN ๑๑๑๒๒๒๓๓๓ ครับ", "bsn:๑๑๑๒๒๒๓๓๓"},
        {"SSN १२३-४५-६७८९", "ssn:१२३-४५-६७८९"},
        {"الخادم ١٩٢.١٦٨.١.١٠ متوقف", "ipv4:١٩٢.١٦٨.١.١٠"},
        {"IBAN NL٩١ABNA٠٤١٧١٦٤٣٠٠", "iban:NL٩١ABNA٠٤١٧١٦٤٣٠٠"},
        {"bel 06-١٢٣٤٥٦٧٨", "phone:06-١٢٣٤٥٦٧٨"},
        {"card 4111 ১১১১ 1111 1111", "card:4111 ১১১১ 1111 1111"},
    };
    RUN(c, 0);
}

/* Every dash, hyphen and minus (category Pd, U+2212) separates groups. */
static void test_dashes(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"card 4111\u20101111\u20101111\u20101111", "card:4111\u20101111\u20101111\u20101111"},
        {"bel 06\u201312345678 nu", "phone:06\u201312345678"},
        {"bel 06\u201112345678 nu", "phone:06\u201112345678"},
        {"call 415\u2212555\u22120132", "phone:415\u2212555\u22120132"},
        {"SSN 123\u201445\u20146789", "ssn:123\u201445\u20146789"},
        {"card 3782\u2012822463\u201210005", "card:3782\u2012822463\u201210005"},
        {"call (415) 555\u20150132", "phone:(415) 555\u20150132"},
        {"bel 020\u2e3a1234567", "phone:020\u2e3a1234567"},
    };
    RUN(c, 0);
}

/* Line breaks and tabs inside a number: a card or phone broken over two
 * lines, groups split by tabs; in plain and in JSON text (escapes). */
static void test_breaks(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"card 4111 1111\n1111 1111 thanks", "card:4111 1111\n1111 1111"},
        {"card 4111 1111 \r\n  1111 1111", "card:4111 1111 \r\n  1111 1111"},
        {"card 4111\t1111\t1111\t1111", "card:4111\t1111\t1111\t1111"},
        {"bel 06 1234\n5678", "phone:06 1234\n5678"},
        {"bel +31 6\r\n12345678", "phone:+31 6\r\n12345678"},
        {"call 415-555-\n0132 today", "phone:415-555-\n0132"},
        {"SSN 123-45-\n6789", "ssn:123-45-\n6789"},
        {"IBAN NL91 ABNA\n0417 1643 00", "iban:NL91 ABNA\n0417 1643 00"},
    };
    RUN(c, 0);
    static const struct tcase j[] = {
        {"{\"card\": \"4111 1111\\n1111 1111\"}", "card:4111 1111\\n1111 1111"},
        {"{\"tel\": \"06\\t1234\\t5678\"}", "phone:06\\t1234\\t5678"},
    };
    RUN(j, 1);
}

/* Card groupings in use (4-4-4-4, Amex 4-6-5, Diners 4-6-4, 19 digits
 * 4-4-4-4-3) with spaces, dots, slashes and dashes. */
static void test_card_groupings(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"card 4111.1111.1111.1111", "card:4111.1111.1111.1111"},
        {"card 4111/1111/1111/1111", "card:4111/1111/1111/1111"},
        {"amex 3782.822463.10005", "card:3782.822463.10005"},
        {"amex 3782/822463/10005", "card:3782/822463/10005"},
        {"diners 3056.930902.5904", "card:3056.930902.5904"},
        {"card 6200 0000 0000 0000 000 ok", "card:6200 0000 0000 0000 000"},
        {"card 6200.0000.0000.0000.000", "card:6200.0000.0000.0000.000"},
    };
    RUN(c, 0);
}

/* Phone formats of the default regions written with dots, slashes,
 * parentheses. */
static void test_phone_formats(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"Tel. (+31) 6 12345678", "phone:(+31) 6 12345678"},
        {"tél 06.12.34.56.78", "phone:06.12.34.56.78"},
        {"Tel. 030/12345678", "phone:030/12345678"},
        {"gsm 0470/12.34.56", "phone:0470/12.34.56"},
        {"call 415.555.0132", "phone:415.555.0132"},
        {"+49 (0)30 1234567", "phone:+49 (0)30 1234567"},
    };
    RUN(c, 0);
}

/* Internationalised addresses (RFC 6531 local parts, IDN domains) masked
 * whole; '@' written as %40 or an HTML character reference. */
static void test_email_forms(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"mail jürgen.müller@example.de now", "email:jürgen.müller@example.de"},
        {"напишите иван@пример.рф пожалуйста", "email:иван@пример.рф"},
        {"邮箱 用户@例子.广告 谢谢", "email:用户@例子.广告"},
        {"mail jan@bücher.de", "email:jan@bücher.de"},
        {"to δοκιμή@παράδειγμα.δοκιμή.", "email:δοκιμή@παράδειγμα.δοκιμή"},
        {"mail info@example.xn--p1ai", "email:info@example.xn--p1ai"},
        {"mail jan%40example.nl", "email:jan%40example.nl"},
        {"href=\"mailto:jan%40example.nl\"", "email:jan%40example.nl"},
        {"mail jan&#64;example.nl", "email:jan&#64;example.nl"},
        {"mail jan&#064;example.nl", "email:jan&#064;example.nl"},
        {"mail jan&#x40;example.nl", "email:jan&#x40;example.nl"},
        {"mail jan&commat;example.nl", "email:jan&commat;example.nl"},
        {"«josé@example.es»", "email:josé@example.es"},
    };
    RUN(c, 0);
}

/* Zero-padded IPv4 addresses: every octet with a leading zero written with
 * three digits. */
static void test_ipv4_padded(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"host 010.001.002.003 down", "ipv4:010.001.002.003"},
        {"ip 192.168.001.010", "ipv4:192.168.001.010"},
    };
    RUN(c, 0);
}

/* Card groupings people write besides fours: two halves of eight, 13-digit
 * Visa 4-4-5, Diners 4-6-4, 19 digits 4-4-4-4-3, Amex 4-6-5, with spaces,
 * dashes, dots or slashes, in other scripts' digits, full width, with
 * zero-width characters inside. */
static void test_card_more_groupings(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"card 55046261-77700202 ok", "card:55046261-77700202"},
        {"card 55046261 77700202 ok", "card:55046261 77700202"},
        {"visa 4767-0679-28127.", "card:4767-0679-28127"},
        {"visa 4767 0679 28127.", "card:4767 0679 28127"},
        {"diners 3056 930902 5904", "card:3056 930902 5904"},
        {"diners 3056-930902-5904", "card:3056-930902-5904"},
        {"card 6011 0000 0000 0000 001", "card:6011 0000 0000 0000 001"},
        {"card 6011-0000-0000-0000-001", "card:6011-0000-0000-0000-001"},
        {"card 6011.0000.0000.0000.001", "card:6011.0000.0000.0000.001"},
        {"amex 3782.822463.10005", "card:3782.822463.10005"},
        {"amex 3400/000000/00124", "card:3400/000000/00124"},
        {"card \u0665\u0662\u0665\u0663\u0668\u0664\u0662\u0660-\u0668\u0664\u0661\u0665\u0665\u0661\u0660\u0668", "card:\u0665\u0662\u0665\u0663\u0668\u0664\u0662\u0660-\u0668\u0664\u0661\u0665\u0665\u0661\u0660\u0668"},
        {"card \uff15\uff15\uff10\uff14\uff16\uff12\uff16\uff11 \uff17\uff17\uff17\uff10\uff10\uff12\uff10\uff12", "card:\uff15\uff15\uff10\uff14\uff16\uff12\uff16\uff11 \uff17\uff17\uff17\uff10\uff10\uff12\uff10\uff12"},
        {"card 5504\u200b6261-7770\u200c0202 ok", "card:5504\u200b6261-7770\u200c0202"},
        {"visa 4767\u20130679\u201328127", "card:4767\u20130679\u201328127"},
    };
    RUN(c, 0);
}

/* A card without groups wrapped between its halves by a line break or a
 * tab; IBAN and phone groups with one blank replaced by a break. */
static void test_wrapped_plain(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"Mis datos son 43613660\n69544872, gracias.", "card:43613660\n69544872"},
        {"44682420\t88735753", "card:44682420\t88735753"},
        {"I miei dati sono 34779522\n5288320, grazie.", "card:34779522\n5288320"},
        {"amex 37423224\t1205340.", "card:37423224\t1205340"},
        {"43189921 \n21549908", "card:43189921 \n21549908"},
        {"IBAN NL91 ABNA 0417\t1643 00", "iban:NL91 ABNA 0417\t1643 00"},
        {"IBAN DE89 3704 0044 0532\n0130 00", "iban:DE89 3704 0044 0532\n0130 00"},
        {"bel +31 6 1234 \n5678", "phone:+31 6 1234 \n5678"},
        {"Tel. 030 1234\t5678", "phone:030 1234\t5678"},
    };
    RUN(c, 0);
}

/* Phones with the 00 international prefix and a dash of any kind between
 * all groups. */
static void test_phone_00_dashes(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"ruf 00\u201449\u2014178\u2014773\u20146961 an", "phone:00\u201449\u2014178\u2014773\u20146961"},
        {"ruf 00\u201149\u2011211\u2011865\u20117715 an", "phone:00\u201149\u2011211\u2011865\u20117715"},
        {"ruf 00-49-30-53474757 an", "phone:00-49-30-53474757"},
        {"ruf 00\ufe6349\ufe63151\ufe638352\ufe632375", "phone:00\ufe6349\ufe63151\ufe638352\ufe632375"},
        {"bel 00-31-6-12345678", "phone:00-31-6-12345678"},
        {"tel 00-33-6-12-34-56-78", "phone:00-33-6-12-34-56-78"},
        {"tel 00-44-20-7946-0958", "phone:00-44-20-7946-0958"},
        {"tel 00-1-415-555-0132", "phone:00-1-415-555-0132"},
        {"tel 00-39-06-6982-1234", "phone:00-39-06-6982-1234"},
        {"tel 00-34-612-345-678", "phone:00-34-612-345-678"},
        {"tel 00-32-470-12-34-56", "phone:00-32-470-12-34-56"},
    };
    RUN(c, 0);
}

/* A line break never hides a value: a line ending in a digit, then a value
 * on the next line. */
static void test_break_boundary(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"ref T1.\n0049 152 176 9604", "phone:0049 152 176 9604"},
        {"item 7\n+31 6 12345678", "phone:+31 6 12345678"},
        {"page 12\n4111 1111 1111 1111", "card:4111 1111 1111 1111"},
        {"row 3\t06 12345678", "phone:06 12345678"},
    };
    RUN(c, 0);
}

/* Hard negatives: what must stay unflagged as the view folds more. */
/* Values written the way they meet other text: an IBAN with a break between
 * letter groups, numbers with one tab each on lines one after the other (a
 * list, not a table), two numbers one after the other, a number after a
 * not-phone word that is not its label, an integer under a phone-named key
 * in JSON text. */
static void test_in_context(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        {"Voici : NL04\nTRIO 1726 2590 11. Merci", "iban:NL04\nTRIO 1726 2590 11"},
        {"IBAN GB77\tBARC 3523 5441 2501 26,", "iban:GB77\tBARC 3523 5441 2501 26"},
        {"IBAN IT22 K336 5675 811H GPME G48A\tH9K, danke", "iban:IT22 K336 5675 811H GPME G48A\tH9K"},
        {"a: DE30 7421\t7093 3678 0672 70, b\nc: 00 32 2\t672 5865 d\ne: 768 498\t216 f",
         "iban:DE30 7421\t7093 3678 0672 70|phone:00 32 2\t672 5865|phone:768 498\t216"},
        {"00 39 389 099 6961 2505 2947 3694 1779 Please", "card:00 39 389 099 6961 2505 2947 3694 1779"},
        {"ab 0612345678 4111 1111 1111 1111 x", "phone:0612345678|card:4111 1111 1111 1111"},
        {"the orders. Mis datos son 07538 553 817, gracias.", "phone:07538 553 817"},
        {"the border 0612345678", "phone:0612345678"},
        {"fe80::f265:f4ba:69fc%wlan0 0034918004615 lucas", "ipv6:fe80::f265:f4ba:69fc|phone:0034918004615"},
        {"via eth0 0612345678", "phone:0612345678"},
    };
    RUN(c, 0);
    static const struct tcase j[] = {
        {"{\"phone\":12064020249,\"id\":12064020249}", "phone:12064020249"},
        {"{\"mobile\" :  31612345678}", "phone:31612345678"},
    };
    RUN(j, 1);
}

static void test_negatives(void **state)
{
    (void)state;
    static const struct tcase c[] = {
        /* versions and dates that look like padded addresses */
        {"version 010.001.002.003", ""},
        {"v2.01.3.4 and 10.01.2.3", ""},
        {"on 01.02.2023 at 10.30", ""},
        {"build 2024.01.15.001", ""},
        /* ranges and minus signs with Unicode dashes */
        {"The 2019\u20132024 plan covers 1500 stores.", ""},
        {"pages 12\u201315 and \u221240 \u00b0C to \u221210 \u00b0C", ""},
        {"1990\u20142000\u20142010\u20142020", ""},
        {"ISBN 978\u20100\u2010306\u201040615\u20107", ""},
        /* Hindi and Arabic text with numbers that are not PII */
        {"कुल १२,३४५ रुपये, दिनांक १५-०१-२०२४", ""},
        {"अध्याय ३.२.१ देखें, पृष्ठ १२३", ""},
        {"رقم الطلب ١٢٣٤٥٦٧٨٩٠ بتاريخ ١٥/٠١/٢٠٢٤", ""},
        {"السعر ١٬٢٣٤٫٥٠ درهم", ""},
        {"سفارش شماره ۱۴۰۲۱۲۳۴۵۶ ثبت شد", ""},
        /* numbers on consecutive lines are separate numbers */
        {"qty\n4012\n8888\n8888\n1881\n", ""},
        {"4012 8888\n\n8888 1881", ""},
        {"Order 4111111111\n111111 shipped", ""},
        {"Order no. 0612345678", ""},
        {"invoice number: 0612345678", ""},
        {"id\tamount\tqty\n10020030\t04005005\t3\n", ""},
        /* a table's tabs separate cells */
        {"year\tq1\tq2\tq3\n2025\t5794\t9196\t9697\n", ""},
        /* '@' look-alikes */
        {"100%40 off and a&#64;b", ""},
        {"&commat;handle and @user", ""},
        {"user@localhost", ""},
        /* two halves of eight and 4-4-5 without a card issuer's prefix:
         * references, dates side by side, two numbers in a row */
        {"ref 10020030-04005005", ""},
        {"order 70001234 56789010 ok", ""},
        {"ref 5600-1234-56784", ""},
        {"ref 56001234-5678418", ""},
        {"from 20240115 to 20240115", ""},
        {"dates\n20240115\n20240115\n", ""},
        {"Bestelnummer 10020030\n04005005", ""},
        /* a version, a date or a page before a break, short numbers after it */
        {"v1.2.3\n4567 8901", ""},
        {"on 15.01.2024\n12 34 56", ""},
        {"page 12\n34 56 78", ""},
        /* the 00 prefix with dashes: times, scores, codes */
        {"at 00-15-30 and 00-1-2", ""},
        {"code 00-12-34-56", ""},
        /* a card's digits with a failing Luhn check */
        {"order 4111.1111.1111.1112", ""},
        {"ref 4111/1111/1111/1112", ""},
    };
    RUN(c, 0);
}

/* Masking covers the whole value in the original bytes: no fragment of a
 * value written the ways above is left in the masked text, and unmasking
 * gives the text back. */
static void test_mask_whole(void **state)
{
    (void)state;
    static const struct {
        const char *text, *frag[4];
    } c[] = {
        {"mail jürgen.müller@example.de now", {"jürgen", "müller", "example.de", NULL}},
        {"write to иван@пример.рф", {"иван", "пример", NULL}},
        {"bel ٠٦-١٢٣٤٥٦٧٨ nu", {"١٢٣٤", "٥٦٧٨", NULL}},
        {"card 4111 1111\n1111 1111", {"4111", "1111", NULL}},
        {"mail jan%40example.nl", {"jan", "example", NULL}},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct sw_pii_map *m = sw_pii_map_new();
        struct sw_buf out, back;
        sw_buf_init(&out, 1 << 16);
        sw_buf_init(&back, 1 << 16);
        assert_int_equal(sw_pii_mask_text(E, m, c[i].text, strlen(c[i].text), &out, NULL), SW_OK);
        for (int k = 0; k < 4 && c[i].frag[k]; k++)
            if (memmem(out.ptr, out.len, c[i].frag[k], strlen(c[i].frag[k])))
                fail_msg("case %zu: \"%s\" left in \"%.*s\"", i, c[i].frag[k], (int)out.len,
                         out.ptr);
        assert_int_equal(sw_pii_unmask_text(m, out.ptr, out.len, 0, &back), SW_OK);
        assert_int_equal(back.len, strlen(c[i].text));
        assert_memory_equal(back.ptr, c[i].text, back.len);
        sw_buf_free(&out);
        sw_buf_free(&back);
        sw_pii_map_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_script_digits),
        cmocka_unit_test(test_dashes),
        cmocka_unit_test(test_breaks),
        cmocka_unit_test(test_card_groupings),
        cmocka_unit_test(test_phone_formats),
        cmocka_unit_test(test_email_forms),
        cmocka_unit_test(test_ipv4_padded),
        cmocka_unit_test(test_card_more_groupings),
        cmocka_unit_test(test_wrapped_plain),
        cmocka_unit_test(test_phone_00_dashes),
        cmocka_unit_test(test_break_boundary),
        cmocka_unit_test(test_in_context),
        cmocka_unit_test(test_negatives),
        cmocka_unit_test(test_mask_whole),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
