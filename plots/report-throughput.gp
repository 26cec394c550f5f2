set terminal svg size 800,480 dynamic font 'sans,13' background '#ffffff'
set output 'report-throughput.svg'
set title 'Throughput per GPU against per user (NVIDIA H200 SXM 141GB, qwen3-8b: bf16 weights, bf16 KV; deepseek-v3: fp8:g16384:fp32 weights, bf16 KV, qwen3-8b: tp 2 x pp 1; deepseek-v3: tp 8 x pp 2 (ep 8, dp 8))' noenhanced
set xlabel 'output tokens/s per user (1000 / TPOT)' noenhanced
set ylabel 'output tokens/s per GPU' noenhanced
set grid
set key outside right top box noenhanced
set datafile missing '?'
set logscale x 10
set logscale y 10
plot 'report-throughput.dat' index 0 using 1:2 with linespoints lw 2 dt 1 pt 7 ps 0.6 lc rgb '#1f77b4' title 'qwen3-8b', \
     'report-throughput.dat' index 1 using 1:2 with linespoints lw 2 dt 1 pt 7 ps 0.6 lc rgb '#ff7f0e' title 'deepseek-v3'
