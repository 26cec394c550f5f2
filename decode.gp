set terminal svg size 800,480 dynamic font 'sans,13' background '#ffffff'
set output 'decode.svg'
set title 'Decode step lower bound'
set xlabel 'context length (tokens)'
set ylabel 'decode step (ms)'
set grid
set key outside right top box
set yrange [0:*]
set xtics ("4K" 4096, "128K" 131072)
plot 'decode.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb '#1f77b4' title 'qwen3-8b'
