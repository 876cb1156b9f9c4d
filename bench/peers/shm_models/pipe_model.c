// Model of the best copy-based one-host allreduce of 2 ranks (not cohort code):
// each chunk, a rank copies the slice its peer reduces into a shared slot, reduces
// its own slice (into its buffer and, fused or not, its slot), and copies the peer's
// result out. Shows where copying through shared slots tops out on a machine.
// Build: cc -O3 -march=native -o pipe pipe_model.c
// Run:   ./pipe SIZE_MIB CHUNK_KIB FUSED(0|1) [STREAMING_STORES(0|1)]   (AVX-512)
// Prints busbw (size / time), one core's memcpy rate and their ratio.
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
typedef struct { _Alignas(64) atomic_ulong in; _Alignas(64) atomic_ulong red; _Alignas(64) atomic_ulong out; } Ctl;
static size_t S; static size_t C; static int K=4; static int fused=1, nt=0;
static Ctl* ctl; static char* slots; // slots[r][k] of C/2 bytes each
static char* slot(int r,int k){return slots+((size_t)r*K+k)*C;}
static void wait_ge(atomic_ulong*a, unsigned long v){while(atomic_load_explicit(a,memory_order_acquire)<v) _mm_pause();}
static void reduce2(float*o,float*o2,const float*a,const float*b,size_t n){
  if(fused){ for(size_t i=0;i<n;i+=16){__m512 x=_mm512_add_ps(_mm512_loadu_ps(a+i),_mm512_loadu_ps(b+i)); if(nt) _mm512_stream_ps(o+i,x); else _mm512_storeu_ps(o+i,x); _mm512_storeu_ps(o2+i,x);} }
  else { for(size_t i=0;i<n;i+=16){__m512 x=_mm512_add_ps(_mm512_loadu_ps(a+i),_mm512_loadu_ps(b+i)); if(nt) _mm512_stream_ps(o+i,x); else _mm512_storeu_ps(o+i,x); } memcpy(o2,o,n*4);} }
static void ntcopy(void*d,const void*s,size_t n){ if(!nt){memcpy(d,s,n);return;} float*o=d; const float*a=s; for(size_t i=0;i<n/4;i+=16) _mm512_stream_ps(o+i,_mm512_loadu_ps(a+i)); }
static void run(int me, float*buf, unsigned long base){
  int peer=1-me; size_t chunks=S/C, half=C/2, hn=half/4;
  for(size_t c=0;c<=chunks;c++){
    unsigned long g=base+c;
    if(c<chunks){
      // wait slot free: peer's out >= g-K+1
      if(g>=(unsigned long)K) wait_ge(&ctl[peer].out, g-K+1);
      char* in=(char*)buf+c*C;
      memcpy(slot(me,g%K)+(size_t)peer*half, in+(size_t)peer*half, half);
      atomic_store_explicit(&ctl[me].in,g+1,memory_order_release);
      wait_ge(&ctl[peer].in,g+1);
      float* mine=(float*)(in+(size_t)me*half);
      reduce2(mine,(float*)(slot(me,g%K)+(size_t)me*half),mine,(float*)(slot(peer,g%K)+(size_t)me*half),hn);
      _mm_sfence(); atomic_store_explicit(&ctl[me].red,g+1,memory_order_release);
    }
    if(c>0){ unsigned long h=g-1; wait_ge(&ctl[peer].red,h+1);
      ntcopy((char*)buf+(c-1)*C+(size_t)peer*half, slot(peer,h%K)+(size_t)peer*half, half);
      _mm_sfence(); atomic_store_explicit(&ctl[me].out,h+1,memory_order_release);}
  }
}
int main(int argc,char**argv){
  S=(size_t)atoi(argv[1])<<20; C=(size_t)atoi(argv[2])<<10; fused=atoi(argv[3]); nt=argc>4?atoi(argv[4]):0; int reps=5;
  ctl=mmap(0,2*sizeof(Ctl),PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  slots=mmap(0,2*K*C,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0); memset(slots,0,2*K*C);
  int pfd[2]; pipe(pfd);
  pid_t c=fork(); int me=c==0?1:0;
  float*buf=aligned_alloc(4096,S); for(size_t i=0;i<S/4;i++) buf[i]=1;
  float*dst=aligned_alloc(4096,S); memset(dst,0,S);
  double best[16];
  for(int r=0;r<reps;r++){
    // barrier via counters: simple: both run; use time of allreduce
    double t=now(); run(me,buf,(unsigned long)r*(S/C+0)); double ta=now()-t;
    // memcpy ref (only measured by rank0 after; the other spins idle on a barrier)
    best[r]=ta;
  }
  if(me==0){ double t=now(); memcpy(dst,buf,S); double tm=now()-t; t=now(); memcpy(dst,buf,S); tm=now()-t;
    // median
    for(int i=0;i<reps;i++)for(int j=i+1;j<reps;j++) if(best[j]<best[i]){double x=best[i];best[i]=best[j];best[j]=x;}
    printf("S=%zuM C=%zuK fused=%d nt=%d busbw %.2f GB/s (median of %d), memcpy %.2f GB/s, ratio %.2f  check %.0f\n",S>>20,C>>10,fused,nt,S/best[reps/2]/1e9,reps,S/tm/1e9,(S/best[reps/2])/(S/tm),buf[7]);
    waitpid(c,0,0);
  }
  return 0;
}
