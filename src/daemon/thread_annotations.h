// Macros for Clang's thread-safety analysis
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html): they state which
// lock guards a member and which locks a function needs, and `clang++
// -Wthread-safety` checks every use against them at compile time
// (scripts/thread-safety-check.sh). With other compilers (GCC) they expand to
// nothing.
//
// The names carry the MIGSCHED_ prefix: Abseil (through gRPC) defines
// unprefixed GUARDED_BY and friends, and the daemon's headers meet it in the
// Kubernetes code.
//
// Thread-safety: macros only.
#ifndef MIGSCHED_DAEMON_THREAD_ANNOTATIONS_H_
#define MIGSCHED_DAEMON_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define MIGSCHED_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define MIGSCHED_THREAD_ANNOTATION(x)
#endif

// A class whose objects are capabilities (locks); `x` names the kind in the
// warnings ("mutex").
#define MIGSCHED_CAPABILITY(x) MIGSCHED_THREAD_ANNOTATION(capability(x))
// A class whose constructor acquires capabilities and whose destructor
// releases them (a lock guard).
#define MIGSCHED_SCOPED_CAPABILITY MIGSCHED_THREAD_ANNOTATION(scoped_lockable)
// A member (or global) read or written only with capability `x` held.
#define MIGSCHED_GUARDED_BY(x) MIGSCHED_THREAD_ANNOTATION(guarded_by(x))
// A pointer member whose pointee is read or written only with `x` held (the
// pointer itself is not guarded).
#define MIGSCHED_PT_GUARDED_BY(x) MIGSCHED_THREAD_ANNOTATION(pt_guarded_by(x))
// The function must be called with the capabilities held (exclusively).
#define MIGSCHED_REQUIRES(...) MIGSCHED_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// The function must not be called with the capabilities held (it takes them).
#define MIGSCHED_EXCLUDES(...) MIGSCHED_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// The function acquires the capabilities (none named: `this`) and returns
// with them held.
#define MIGSCHED_ACQUIRE(...) MIGSCHED_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
// The function releases the capabilities (none named: `this`, or what a
// scoped capability acquired).
#define MIGSCHED_RELEASE(...) MIGSCHED_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// Turns the analysis off for one function; say why beside each use.
#define MIGSCHED_NO_THREAD_SAFETY_ANALYSIS MIGSCHED_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // MIGSCHED_DAEMON_THREAD_ANNOTATIONS_H_
