/* uas_mem_count_libraries: OpenSSL's and libev's allocations go through
 * the stack's allocator and show in its counters; and uas_wipe. The hooks
 * are installed by a constructor, before anything in this process makes
 * OpenSSL allocate (it refuses them afterwards). */
#include <criterion/criterion.h>

#include <string.h>

#include <ev.h>

#include <ua/mem.h>

static uas_status hooked = UAS_BAD_INTERNAL_ERROR;

__attribute__((constructor)) static void hook_libraries(void)
{
    hooked = uas_mem_count_libraries();
}

Test(mem_libs, libev_allocations_are_counted_and_given_back)
{
    cr_assert_eq(hooked, UAS_GOOD);
    uas_mem_stats s0, s1, s2;
    uas_mem_get_stats(&s0);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    cr_assert_not_null(loop);
    uas_mem_get_stats(&s1);
    cr_assert_gt(s1.allocs, s0.allocs, "ev_loop_new allocates through the stack");
    cr_assert_gt(s1.bytes_live, s0.bytes_live);
    ev_loop_destroy(loop);
    uas_mem_get_stats(&s2);
    cr_assert_eq(s2.bytes_live, s0.bytes_live, "everything libev took is given back");
}

#ifdef UAS_ENABLE_ENCRYPTION
#include <openssl/crypto.h>
#include <openssl/evp.h>

Test(mem_libs, openssl_allocations_are_counted_and_given_back)
{
    cr_assert_eq(hooked, UAS_GOOD);
    uas_mem_stats s0, s1, s2;
    uas_mem_get_stats(&s0);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    cr_assert_not_null(c);
    cr_assert_eq(EVP_DigestInit_ex2(c, EVP_sha256(), NULL), 1);
    uint8_t *grown = OPENSSL_malloc(10);
    cr_assert_not_null(grown);
    grown = OPENSSL_realloc(grown, 5000); /* realloc keeps the size right */
    cr_assert_not_null(grown);
    memset(grown, 1, 5000);
    uas_mem_get_stats(&s1);
    cr_assert_gt(s1.allocs, s0.allocs, "OpenSSL allocates through the stack");
    cr_assert_geq(s1.bytes_live - s0.bytes_live, 5000);
    OPENSSL_free(grown);
    EVP_MD_CTX_free(c);
    uas_mem_get_stats(&s2);
    /* Fetched algorithms stay cached inside OpenSSL; the context and the
     * buffer are what must come back. */
    cr_assert_leq(s2.bytes_live - s0.bytes_live, s1.bytes_live - s0.bytes_live - 5000);
}
#endif

Test(mem_libs, wipe_zeroes_every_byte_and_accepts_nothing)
{
    uint8_t buf[37], zero[37] = {0};
    memset(buf, 0xa5, sizeof(buf));
    uas_wipe(buf, sizeof(buf));
    cr_assert(memcmp(buf, zero, sizeof(buf)) == 0);
    uas_wipe(NULL, 0);
    uas_wipe(buf, 0);
}
