/* libFuzzer driver for the config loader (sw_config_parse, the same function
 * sw_config_load_file calls after reading the file): any bytes as a config
 * file either load into a snapshot or are refused with at least one message,
 * never a crash, a leak (ASan's leak check at exit) or undefined behaviour.
 * Refused: *out is NULL, every message is a non-empty string. Loaded: no
 * messages, and the lookups work on the snapshot. ${NAME} substitution sees
 * a fixed environment (a few names set, the rest unset) so runs repeat. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "config/config.h"

#include "check.h"

static const char *fake_getenv(const char *name, void *ud)
{
    (void)ud;
    if (!strcmp(name, "APP_KEY"))
        return "sk-app-0123456789";
    if (!strcmp(name, "INTERNAL_KEY"))
        return "sk-internal-0123456789";
    if (!strcmp(name, "ADMIN_KEY"))
        return "sk-admin-0123456789";
    if (!strcmp(name, "OPENAI_API_KEY") || !strcmp(name, "ANTHROPIC_API_KEY"))
        return "sk-cloud-0123456789";
    if (!strcmp(name, "EMPTY"))
        return "";
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_config *cfg = (struct sw_config *)(uintptr_t)1;   /* must be overwritten */
    struct sw_config_errors errs = {0};
    int rc = sw_config_parse("fuzz.yaml", (const char *)data, size, fake_getenv, NULL, &cfg, &errs);

    if (rc == SW_OK) {
        CHECK(cfg != NULL);
        CHECK(errs.n == 0);
        (void)sw_config_find_model(cfg, "m");
        (void)sw_config_find_key(cfg, "sk-app-0123456789");
        struct sw_config *ref = sw_config_ref(cfg);
        CHECK(ref == cfg);
        sw_config_unref(ref);
        sw_config_unref(cfg);
    } else {
        CHECK(rc == SW_EINVAL || rc == SW_ENOMEM);
        CHECK(cfg == NULL);
        CHECK(errs.n >= 1);
        for (size_t i = 0; i < errs.n; i++)
            CHECK(errs.msgs[i] != NULL && errs.msgs[i][0] != '\0');
    }
    sw_config_errors_free(&errs);
    return 0;
}
