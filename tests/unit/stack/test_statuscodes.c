/* Names and descriptions of status codes: the generated table (offsets into
 * one string per kind, stack/gen/src/statuscodes.c) gives every code its
 * own text, the first and last rows included, and ignores the info bits. */
#include <criterion/criterion.h>

#include <ua/status.h>

#ifdef UAS_MINIMAL
/* The minimal profile names a code by its value (no name table). */
Test(statuscodes, minimal_names_are_the_code_in_hex)
{
    cr_expect_str_eq(uas_status_name(UAS_GOOD), "0x00000000");
    cr_expect_str_eq(uas_status_name(UAS_BAD_NODE_ID_UNKNOWN), "0x80340000");
    cr_expect_str_eq(uas_status_name(UAS_BAD_NODE_ID_UNKNOWN | 0x0400u), "0x80340400");
    cr_expect_str_eq(uas_status_name(0xFFFF0000u), "0xFFFF0000");
    /* one log line may name several codes */
    const char *a = uas_status_name(UAS_GOOD), *b = uas_status_name(UAS_BAD_TICKET_INVALID);
    cr_expect_str_eq(a, "0x00000000");
    cr_expect_str_eq(b, "0x81200000");
    cr_expect_str_eq(uas_status_description(UAS_BAD_NODE_ID_UNKNOWN), "");
}
#else
Test(statuscodes, names_of_first_middle_and_last_rows)
{
    cr_expect_str_eq(uas_status_name(UAS_GOOD), "Good");
    cr_expect_str_eq(uas_status_name(UAS_GOOD_SUBSCRIPTION_TRANSFERRED),
                     "GoodSubscriptionTransferred");
    cr_expect_str_eq(uas_status_name(UAS_BAD_NODE_ID_UNKNOWN), "BadNodeIdUnknown");
    cr_expect_str_eq(uas_status_name(UAS_BAD_TICKET_INVALID), "BadTicketInvalid");
}

Test(statuscodes, info_bits_do_not_change_the_name)
{
    cr_expect_str_eq(uas_status_name(UAS_BAD_NODE_ID_UNKNOWN | 0x0400u), "BadNodeIdUnknown");
    cr_expect_str_eq(uas_status_name(UAS_GOOD | 0x0080u), "Good");
}

Test(statuscodes, unknown_codes)
{
    cr_expect_str_eq(uas_status_name(0x80FF0000u), "Unknown");
    cr_expect_str_eq(uas_status_name(0xFFFF0000u), "Unknown");
    cr_expect_str_eq(uas_status_description(0xFFFF0000u), "");
}

Test(statuscodes, descriptions)
{
    cr_expect_str_eq(uas_status_description(UAS_GOOD), "The operation succeeded.");
    cr_expect_str_eq(uas_status_description(UAS_GOOD_SUBSCRIPTION_TRANSFERRED),
                     "The subscription was transferred to another session.");
    cr_expect_str_eq(uas_status_description(UAS_BAD_NODE_ID_UNKNOWN),
                     "The node id refers to a node that does not exist in the server address "
                     "space.");
    cr_expect_str_eq(uas_status_description(UAS_BAD_TICKET_INVALID),
                     "The device identity needs a ticket before it can be accepted.");
}
#endif
