/* Keys of per-address quotas (unactivated sessions, connections): one
 * IPv6 /64 is one client, as the login throttle counts it. */
#include <criterion/criterion.h>

#include <string.h>

#include "quota_map.h"

static const uint8_t key[UAS_ADDRESS_KEY_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};

Test(quota_map, an_ipv6_64_is_one_address)
{
    uint64_t a = uas_address_key(key, "2001:db8:1:2::1");
    cr_expect_eq(a, uas_address_key(key, "2001:db8:1:2:ffff::9"),
                 "two addresses of one /64 counted apart");
    cr_expect_neq(a, uas_address_key(key, "2001:db8:1:3::1"));
    cr_expect_eq(uas_address_key(key, "::ffff:192.0.2.1"), uas_address_key(key, "192.0.2.1"));
    cr_expect_neq(uas_address_key(key, "192.0.2.1"), uas_address_key(key, "192.0.2.2"));
    cr_expect_neq(a, 0);
}

Test(quota_map, counts_per_key_and_forgets_at_zero)
{
    quota_map m;
    cr_assert(quota_init(&m, 16));
    for (uint64_t k = 1; k <= 6; k++)
        for (uint64_t i = 0; i < k; i++)
            quota_add(&m, k * 16 + 1); /* keys in one probe chain */
    for (uint64_t k = 1; k <= 6; k++)
        cr_expect_eq(quota_get(&m, k * 16 + 1), k);
    quota_sub(&m, 17);
    cr_expect_eq(quota_get(&m, 17), 0);
    for (uint64_t k = 2; k <= 6; k++)
        cr_expect_eq(quota_get(&m, k * 16 + 1), k, "key %llu lost", (unsigned long long)k);
    cr_expect_eq(quota_get(&m, 0), 0);
    quota_free(&m);
}
