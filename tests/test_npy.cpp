// .npy files (save_npy, load_npy) and printing (set_print_options).
#include "common.hpp"
