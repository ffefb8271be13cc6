#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int c,char**v){MPI_Init(&c,&v);int r;MPI_Comm_rank(MPI_COMM_WORLD,&r);
 int B=c>1?atoi(v[1]):200, N=2000; char s[8]={1},d[8]; double t[1000];
 for(int i=0;i<5000;i++)MPI_Allreduce(s,d,8,MPI_CHAR,MPI_SUM,MPI_COMM_WORLD);
 for(int b=0;b<B;b++){MPI_Barrier(MPI_COMM_WORLD);double t0=MPI_Wtime();for(int i=0;i<N;i++)MPI_Allreduce(s,d,8,MPI_CHAR,MPI_SUM,MPI_COMM_WORLD);t[b]=(MPI_Wtime()-t0)/N*1e6;}
 qsort(t,B,sizeof(double),cmp);
 if(!r)printf("min %.3f p10 %.3f p25 %.3f med %.3f\n",t[0],t[B/10],t[B/4],t[B/2]);
 MPI_Finalize();}
