set terminal svg size 800,480 dynamic font 'sans,13' background '#ffffff'
set output 'report-requests.svg'
set title 'Requests per deployment (NVIDIA H200 SXM 141GB, qwen3-8b: bf16 weights, bf16 KV; deepseek-v3: fp8:g16384:fp32 weights, bf16 KV, qwen3-8b: tp 2 x pp 1; deepseek-v3: tp 8 x pp 2 (ep 8, dp 8))' noenhanced
set xlabel 'context length (tokens)' noenhanced
set ylabel 'requests per deployment' noenhanced
set grid
set key outside right top box noenhanced
set datafile missing '?'
set logscale x 2
set logscale y 10
set xtics ("4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576)
plot 'report-requests.dat' using 1:2 with linespoints lw 2 dt 1 pt 7 ps 0.6 lc rgb '#1f77b4' title 'qwen3-8b', \
     'report-requests.dat' using 1:3 with linespoints lw 2 dt 1 pt 7 ps 0.6 lc rgb '#ff7f0e' title 'deepseek-v3'
