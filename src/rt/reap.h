/* rt/reap: destroying PJRT buffers off the calling thread.
 *
 * PJRT_Buffer_Destroy blocks until every launch still using the buffer has
 * finished (the CPU client awaits its usage holds). The host drops a
 * tensor's buffer as soon as it has launched the op that reads it last, so
 * destroying inline made the host wait for the device on nearly every
 * launch and host and device took turns instead of overlapping. Dropped
 * buffers go to a reaper thread instead; the device's memory comes back
 * when the plugin is done with it, as before, and our own byte counts drop
 * at release time as they always did.
 *
 * tpj_rt_reap_drain() returns once every buffer handed over so far is
 * destroyed: synchronize and close call it, so after a synchronize the
 * plugin's own memory statistics match the live tensors. */
#ifndef TPJ_RT_REAP_H_
#define TPJ_RT_REAP_H_

#include "pjrt_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Destroys b (never NULL) here when no launch is running, else hands it to
 * the reaper (or destroys it here when the thread cannot be started). */
void tpj_rt_reap_buffer(const PJRT_Api* api, PJRT_Buffer* b);

/* Notes a launch whose completion event is done: while any launch is
 * still running, dropped buffers go to the reaper; with none running they
 * are destroyed at once (nothing can be using them). */
void tpj_rt_reap_track_launch(const PJRT_Api* api, PJRT_Event* done);

/* Waits until every buffer handed over before the call is destroyed. */
void tpj_rt_reap_drain(void);

/* Buffers handed over and not yet destroyed (tests). */
long tpj_rt_reap_pending(void);

#ifdef __cplusplus
}
#endif
#endif /* TPJ_RT_REAP_H_ */
