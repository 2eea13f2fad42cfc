// Phone number validation with libphonenumber; see phone.h.
#include "pii/phone.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <phonenumbers/logger.h>
#include <phonenumbers/phonemetadata.pb.h>
#include <phonenumbers/phonenumber.pb.h>
#include <phonenumbers/phonenumberutil.h>

// The metadata libphonenumber is built with (its own generated metadata.cc;
// the library exports these but installs no header for them).
namespace i18n {
namespace phonenumbers {
int metadata_size();
const void *metadata_get();
}
}

using i18n::phonenumbers::PhoneMetadata;
using i18n::phonenumbers::PhoneMetadataCollection;
using i18n::phonenumbers::PhoneNumberDesc;

using i18n::phonenumbers::NullLogger;
using i18n::phonenumbers::PhoneNumber;
using i18n::phonenumbers::PhoneNumberUtil;

static const PhoneNumberUtil *util()
{
    static std::once_flag once;
    static PhoneNumberUtil *u;
    std::call_once(once, [] {
        u = PhoneNumberUtil::GetInstance();
        u->SetLogger(new NullLogger());     // the numbers must never reach a log
    });
    return u;
}

extern "C" bool sw_pii_phone_region_ok(const char *cc)
{
    try {
        std::set<std::string> regions;
        util()->GetSupportedRegions(&regions);
        return regions.count(cc) > 0;
    } catch (...) {
        return false;
    }
}

static bool national(const PhoneNumberUtil *u, const char *s, size_t len, const char (*regions)[3],
                     size_t n, bool possible);
namespace {
const struct Rules *rules_for(const char *region);
}

// libphonenumber compiles a number type's regular expression the first time
// a number is checked against it (ICU, ~100 000 instructions each): validating
// each type's example number of each region compiles them here, when the
// engine is built, instead of in the first requests' scans.
extern "C" void sw_pii_phone_warm(const char (*regions)[3], size_t n)
{
    try {
        const PhoneNumberUtil *u = util();
        for (size_t i = 0; i < n; i++) {
            (void)rules_for(regions[i]);
            std::string region(regions[i], 2);
            std::set<PhoneNumberUtil::PhoneNumberType> types;
            u->GetSupportedTypesForRegion(region, &types);
            for (PhoneNumberUtil::PhoneNumberType t : types) {
                PhoneNumber pn;
                if (u->GetExampleNumberForType(region, t, &pn))
                    (void)u->IsValidNumberForRegion(pn, region);
            }
        }
    } catch (...) {
    }
}

// A number in international notation ('+', then digits and " ().-/") as
// Parse(text, "ZZ") followed by IsPossibleNumber decides it, without Parse's
// regular expressions (~140 000 instructions a number): the country code is
// the first 1-3 digits that name one (country codes are prefix-free), and
// the rest is the national significant number when Parse would strip no
// national prefix from it: the country's prefix for parsing is a plain digit
// string the rest does not start with. 1 or 0; -1 when that does not hold
// (a regular-expression prefix, a rest that starts with the prefix, a length
// Parse rejects): Parse decides.
static const PhoneMetadata *metadata_for(const std::string &region, int cc);

static int intl_possible(const PhoneNumberUtil *u, const char *s, size_t len)
{
    std::string d;
    for (size_t i = 1; i < len; i++) {
        if (s[i] >= '0' && s[i] <= '9')
            d += s[i];
        else if (!strchr(" ().-/", s[i]) || !s[i])
            return -1;
    }
    if (d.size() < 3 || d[0] == '0')
        return -1;
    std::string region;
    size_t k = 1;
    int cc = 0;
    for (; k <= 3; k++) {
        cc = std::stoi(d.substr(0, k));
        u->GetRegionCodeForCountryCode(cc, &region);
        if (region != "ZZ")
            break;
    }
    if (k > 3)
        return 0;                   // no country code: Parse fails
    const PhoneMetadata *m = metadata_for(region, cc);
    if (!m)
        return -1;
    std::string nsn = d.substr(k);
    const std::string &np = m->national_prefix_for_parsing();
    for (char c : np)
        if (c < '0' || c > '9')
            return -1;
    if ((!np.empty() && nsn.compare(0, np.size(), np) == 0) || nsn.size() < 2 || nsn.size() > 17)
        return -1;
    PhoneNumber pn;
    pn.set_country_code(cc);
    size_t zeros = 0;
    while (zeros < nsn.size() && nsn[zeros] == '0')
        zeros++;
    if (zeros == nsn.size())
        return -1;
    if (zeros > 0) {
        pn.set_italian_leading_zero(true);
        if (zeros > 1)
            pn.set_number_of_leading_zeros((int)zeros);
    }
    pn.set_national_number(std::stoull(nsn));
    return u->IsPossibleNumber(pn);
}

extern "C" int sw_pii_phone_intl_vs_parse(const char *s, size_t len, int *parse)
{
    try {
        const PhoneNumberUtil *u = util();
        PhoneNumber pn;
        *parse = u->Parse(std::string(s, len), "ZZ", &pn) == PhoneNumberUtil::NO_PARSING_ERROR &&
                 u->IsPossibleNumber(pn);
        return intl_possible(u, s, len);
    } catch (...) {
        *parse = -1;
        return -2;
    }
}

extern "C" bool sw_pii_phone_valid(const char *s, size_t len, const char (*regions)[3], size_t n)
{
    try {
        const PhoneNumberUtil *u = util();
        std::string text(s, len);
        PhoneNumber pn;
        // International notation (the 00 prefix, written as +): a known
        // country code and a length possible for it is enough, as for numbers
        // written with + (an explicit international prefix is a strong sign;
        // number ranges change faster than the metadata).
        if (len > 0 && s[0] == '+') {
            int fast = intl_possible(u, s, len);
            if (fast >= 0)
                return fast;
            return u->Parse(text, "ZZ", &pn) == PhoneNumberUtil::NO_PARSING_ERROR &&
                   u->IsPossibleNumber(pn);
        }
        return national(u, s, len, regions, n, false);
    } catch (...) {
        return false;
    }
}

extern "C" bool sw_pii_phone_possible(const char *s, size_t len, const char (*regions)[3], size_t n)
{
    try {
        return national(util(), s, len, regions, n, true);
    } catch (...) {
        return false;
    }
}

// A region's validity rules, the same metadata and the same test as
// PhoneNumberUtil::IsValidNumberForRegion (the number's national significant
// number matches the general description, then one of the types' lengths and
// pattern), the patterns compiled by PCRE2 with its JIT: libphonenumber runs
// them through ICU regular expressions and looks each one up by its text in a
// cache on every check, ~8 000 instructions per region and number. Built once
// per region and kept for the process; a region whose rules cannot be built
// is checked by libphonenumber.
namespace {
struct Desc {
    std::vector<int> lengths;       // empty: any
    pcre2_code *re = nullptr;       // null: matches nothing
};
struct Rules {
    Desc general;
    std::vector<Desc> types;        // the order of GetNumberTypeHelper
};
std::atomic<const Rules *> rules_tab[26 * 26];
std::once_flag rules_once;
const PhoneMetadataCollection *collection;
std::mutex rules_lock;

bool desc_from(const PhoneNumberDesc &d, Desc *out)
{
    for (int l : d.possible_length())
        out->lengths.push_back(l);
    if (d.national_number_pattern().empty())
        return true;
    int err;
    PCRE2_SIZE off;
    std::string re = "(?:" + d.national_number_pattern() + ")";
    out->re = pcre2_compile((PCRE2_SPTR)re.data(), re.size(), PCRE2_ANCHORED | PCRE2_ENDANCHORED,
                            &err, &off, nullptr);
    if (!out->re)
        return false;
    (void)pcre2_jit_compile(out->re, PCRE2_JIT_COMPLETE);     // interpreted if JIT is unavailable
    return true;
}

const Rules *rules_for(const char *region)
{
    if (region[0] < 'A' || region[0] > 'Z' || region[1] < 'A' || region[1] > 'Z')
        return nullptr;
    size_t k = (size_t)(region[0] - 'A') * 26 + (size_t)(region[1] - 'A');
    const Rules *r = rules_tab[k].load(std::memory_order_acquire);
    if (r)
        return r;
    std::call_once(rules_once, [] {
        auto *c = new PhoneMetadataCollection();
        if (c->ParseFromArray(i18n::phonenumbers::metadata_get(), i18n::phonenumbers::metadata_size()))
            collection = c;
        else
            delete c;
    });
    if (!collection)
        return nullptr;
    std::lock_guard<std::mutex> g(rules_lock);
    if ((r = rules_tab[k].load(std::memory_order_acquire)))
        return r;
    for (const PhoneMetadata &m : collection->metadata()) {
        if (m.id().size() != 2 || m.id()[0] != region[0] || m.id()[1] != region[1])
            continue;
        auto *n = new Rules();
        bool ok = desc_from(m.general_desc(), &n->general);
        const PhoneNumberDesc *types[] = {&m.premium_rate(), &m.toll_free(), &m.shared_cost(),
                                          &m.voip(), &m.personal_number(), &m.pager(),
                                          &m.uan(), &m.voicemail(), &m.fixed_line(), &m.mobile()};
        size_t nt = sizeof types / sizeof types[0];
        if (m.same_mobile_and_fixed_line_pattern())
            nt--;               // mobile is not checked apart (GetNumberTypeHelper)
        for (size_t i = 0; ok && i < nt; i++) {
            n->types.emplace_back();
            ok = desc_from(*types[i], &n->types.back());
        }
        if (!ok)
            return nullptr;     // leaked on purpose: libphonenumber checks this region
        rules_tab[k].store(n, std::memory_order_release);
        return n;
    }
    return nullptr;
}

bool desc_match(const Desc &d, const std::string &nsn, pcre2_match_data *md)
{
    if (!d.lengths.empty()) {
        bool in = false;
        for (int l : d.lengths)
            in = in || l == (int)nsn.size();
        if (!in)
            return false;
    }
    if (!d.re)
        return false;
    return pcre2_match(d.re, (PCRE2_SPTR)nsn.data(), nsn.size(), 0, 0, md, nullptr) >= 0;
}

// -1: no rules for the region (ask libphonenumber), else 0 or 1.
int rules_valid(const char *region, const std::string &nsn)
{
    const Rules *r = rules_for(region);
    if (!r)
        return -1;
    thread_local pcre2_match_data *md = pcre2_match_data_create(1, nullptr);
    if (!md)
        return -1;
    if (!desc_match(r->general, nsn, md))
        return 0;
    for (const Desc &d : r->types)
        if (desc_match(d, nsn, md))
            return 1;
    return 0;
}
}   // namespace

extern "C" int sw_pii_phone_rules_vs_lib(const char *region, const char *nsn, int *lib)
{
    try {
        const PhoneNumberUtil *u = util();
        std::string r(region, 2), n(nsn);
        PhoneNumber pn;
        pn.set_country_code(u->GetCountryCodeForRegion(r));
        size_t zeros = 0;
        while (zeros < n.size() && n[zeros] == '0')
            zeros++;
        if (zeros > 0) {
            pn.set_italian_leading_zero(true);
            if (zeros > 1)
                pn.set_number_of_leading_zeros((int)zeros);
        }
        pn.set_national_number(zeros < n.size() ? std::stoull(n) : 0);
        *lib = u->IsValidNumberForRegion(pn, r);
        return rules_valid(region, n);
    } catch (...) {
        *lib = -1;
        return -1;
    }
}

// National notation: the number is built directly (country code of the
// region, the trunk prefix dropped) rather than parsed, which is several
// times cheaper than Parse's regular expressions. Valid for one of the
// regions, or (possible) of a length a fixed-line or mobile number of one
// of them has and in a range the region uses (its first two digits start
// a valid number of that length).
static bool national(const PhoneNumberUtil *u, const char *s, size_t len, const char (*regions)[3],
                     size_t n, bool possible)
{
    {
        PhoneNumber pn;
        std::string digits;
        for (size_t i = 0; i < len; i++)
            if (s[i] >= '0' && s[i] <= '9')
                digits += s[i];
        if (digits.empty() || digits.size() > 17)
            return false;
        for (size_t i = 0; i < n; i++) {
            std::string region(regions[i], 2), ndd, nsn = digits;
            int cc = u->GetCountryCodeForRegion(region);
            if (cc == 0)
                continue;
            u->GetNddPrefixForRegion(region, true, &ndd);
            if (!ndd.empty() && nsn.compare(0, ndd.size(), ndd) == 0)
                nsn.erase(0, ndd.size());
            if (nsn.empty())
                continue;
            pn.Clear();
            pn.set_country_code(cc);
            size_t zeros = 0;
            while (zeros < nsn.size() && nsn[zeros] == '0')
                zeros++;
            if (zeros == nsn.size())
                continue;
            if (zeros > 0) {            // Italian numbers keep their leading 0
                pn.set_italian_leading_zero(true);
                if (zeros > 1)
                    pn.set_number_of_leading_zeros((int)zeros);
            }
            pn.set_national_number(std::stoull(nsn));
            if (!possible) {
                int v = rules_valid(regions[i], nsn);
                if (v < 0)
                    v = u->IsValidNumberForRegion(pn, region);
                if (v)
                    return true;
                continue;
            }
            if (u->IsPossibleNumberForType(pn, PhoneNumberUtil::FIXED_LINE) ||
                u->IsPossibleNumberForType(pn, PhoneNumberUtil::MOBILE))
                return true;
        }
        return false;
    }
}

// The metadata of region (a main region, or "001" for non-geographic
// codes) with country code cc, from the collection the rules use.
static const PhoneMetadata *metadata_for(const std::string &region, int cc)
{
    (void)rules_for("NL");          // loads the collection
    if (!collection)
        return nullptr;
    for (const PhoneMetadata &m : collection->metadata())
        if (m.country_code() == cc && m.id() == region)
            return &m;
    return nullptr;
}
