// Interop: wrapping user memory without a copy (from_blob, data()), Eigen matrices and DLPack.
#include "common.hpp"
