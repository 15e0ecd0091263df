// Host emulation build of native_ops.cu: the same entry points on CPU tensors, with torchlean's
// own kernels executed by the cooperative-thread emulator (tl_emulator.h).  Used by the test
// suite on machines without a GPU; never selected by a capsule.
#define TORCHLEAN_EMULATE 1
#include "../native_ops.cu"
