// A policy that reaches the run's truth through another header: the layering test must fail.
#include "io/trace_reader.h"
