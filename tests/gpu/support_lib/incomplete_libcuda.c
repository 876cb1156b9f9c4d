/* A stand-in libcuda.so.1 that exports cuInit only, for the test that a
   driver library lacking an entry point cohort needs is reported by name
   (tests/gpu/gpu_stack_test.cc). */
int cuInit(unsigned flags) { return (int)flags; }
