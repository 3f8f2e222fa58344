// The check macro for UCX status codes, used only inside collectives/ucx/ (the backend's edge):
// a failing call becomes a cohort::Error for `rank` (COHORT_UCX_FAIL, channel.hpp) that names the
// expression and UCX's text for the status. Only setup (context.cpp) uses it: later failures are
// reported through the op they belong to (coll_channel.hpp, p2p.cpp). Internal header: it
// includes ucp.h.
#pragma once

#include <ucp/api/ucp.h>

#include "ucx/channel.hpp"

#define COHORT_CHECK_UCX(rank, call, ...)                                             \
  do {                                                                                \
    const ucs_status_t cohort_ucx_status_ = (call);                                   \
    if (cohort_ucx_status_ != UCS_OK)                                                 \
      COHORT_UCX_FAIL(rank, __VA_ARGS__,                                              \
                      ": " #call " failed: ", ucs_status_string(cohort_ucx_status_)); \
  } while (0)
