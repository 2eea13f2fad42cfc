// Phone number validation with libphonenumber; see phone.h.
#include "pii/phone.h"

#include <mutex>
#include <set>
#include <string>

#include <phonenumbers/logger.h>
#include <phonenumbers/phonenumber.pb.h>
#include <phonenumbers/phonenumberutil.h>

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

// libphonenumber compiles a number type's regular expression the first time
// a number is checked against it (ICU, ~100 000 instructions each): validating
// each type's example number of each region compiles them here, when the
// engine is built, instead of in the first requests' scans.
extern "C" void sw_pii_phone_warm(const char (*regions)[3], size_t n)
{
    try {
        const PhoneNumberUtil *u = util();
        for (size_t i = 0; i < n; i++) {
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
        if (len > 0 && s[0] == '+')
            return u->Parse(text, "ZZ", &pn) == PhoneNumberUtil::NO_PARSING_ERROR &&
                   u->IsPossibleNumber(pn);
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
                if (u->IsValidNumberForRegion(pn, region))
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
