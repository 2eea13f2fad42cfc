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

extern "C" bool sw_pii_phone_valid(const char *s, size_t len, const char (*regions)[3], size_t n)
{
    try {
        const PhoneNumberUtil *u = util();
        std::string text(s, len);
        PhoneNumber pn;
        if (len > 0 && s[0] == '+')
            return u->Parse(text, "ZZ", &pn) == PhoneNumberUtil::NO_PARSING_ERROR &&
                   u->IsValidNumber(pn);
        for (size_t i = 0; i < n; i++) {
            std::string region(regions[i], 2);
            pn.Clear();
            if (u->Parse(text, region, &pn) == PhoneNumberUtil::NO_PARSING_ERROR &&
                u->IsValidNumberForRegion(pn, region))
                return true;
        }
        return false;
    } catch (...) {
        return false;
    }
}
