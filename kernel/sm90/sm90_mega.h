// kernel/sm90/sm90_mega.h — the Hopper megakernel's launcher (sm90_mega.cu), for sm90_backend.cu; the host side
// that uses it is shared with the Blackwell kernel (kernel/mega/mega_gpu.h).
#ifndef SG_SM90_MEGA_H
#define SG_SM90_MEGA_H

#include "../mega/mega_gpu.h"

extern const sg_mega_launcher sg_sm90_mega_launcher;

#endif
