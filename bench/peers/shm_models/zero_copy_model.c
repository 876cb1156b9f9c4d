// Model of a zero-copy 2-rank allreduce over buffers both processes map (not cohort
// code): rank l sums slice l of both buffers into both. The bound cohort's
// shared-memory buffers (AllocateSharedMemory) approach.
// Build: cc -O3 -march=native -o zc zero_copy_model.c
// Run:   ./zc SIZE_MIB STREAMING_STORES(0|1) [MADV_HUGEPAGE(0|1)]   (AVX-512)
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct { _Alignas(64) atomic_ulong seq; } Ctl;
int main(int argc,char**argv){ size_t S=(size_t)atoi(argv[1])<<20; int nt=atoi(argv[2]); int thp=argc>3?atoi(argv[3]):0; int reps=7;
  Ctl*ctl=mmap(0,2*sizeof(Ctl),PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  float*b[2]; for(int i=0;i<2;i++){ b[i]=mmap(0,S,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0); if(thp) madvise(b[i],S,MADV_HUGEPAGE);}
  pid_t c=fork(); int me=c==0?1:0, peer=1-me;
  for(size_t i=0;i<S/4;i++) b[me][i]=1;
  size_t n=S/4, half=n/2; size_t lo=me*half, hi=lo+half;
  double ts[16]; unsigned long g=0;
  for(int r=0;r<reps;r++){
    atomic_store(&ctl[me].seq,++g); while(atomic_load(&ctl[peer].seq)<g) _mm_pause();
    double t=now();
    float*x=b[me],*y=b[peer];
    for(size_t i=lo;i<hi;i+=16){__m512 v=_mm512_add_ps(_mm512_loadu_ps(x+i),_mm512_loadu_ps(y+i)); if(nt){_mm512_stream_ps(x+i,v);_mm512_stream_ps(y+i,v);} else {_mm512_storeu_ps(x+i,v);_mm512_storeu_ps(y+i,v);}}
    _mm_sfence();
    atomic_store(&ctl[me].seq,++g); while(atomic_load(&ctl[peer].seq)<g) _mm_pause();
    ts[r]=now()-t;
  }
  for(int i=0;i<reps;i++)for(int j=i+1;j<reps;j++) if(ts[j]<ts[i]){double x=ts[i];ts[i]=ts[j];ts[j]=x;}
  if(me==0){ char*d=aligned_alloc(4096,S),*s=aligned_alloc(4096,S); memset(d,0,S); memset(s,1,S); double tm=1e9; for(int k=0;k<5;k++){double t=now(); memcpy(d,s,S); double e=now()-t; if(e<tm) tm=e;}
    printf("zero-copy S=%zuM nt=%d thp=%d busbw %.2f GB/s, memcpy(best of 5) %.2f, ratio %.2f check %.0f/%.0f\n",S>>20,nt,thp,S/ts[reps/2]/1e9,S/tm/1e9,(S/ts[reps/2])/(S/tm),b[0][5],b[1][n-5]); waitpid(c,0,0);}
  return 0;}
