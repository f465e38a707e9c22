# Build tok_dump against llama.cpp's `llama` library (copy as CMakeLists.txt
# next to tok_dump.cpp; see README.md):
#   cmake -S . -B b -DLLAMA_CPP_DIR=/path/to/llama.cpp -DCMAKE_BUILD_TYPE=Release \
#         -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
#         -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=OFF
#   nice make -C b -j2 tok_dump
cmake_minimum_required(VERSION 3.14)
project(tokdump CXX C)
set(LLAMA_CPP_DIR "" CACHE PATH "llama.cpp source tree")
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "" FORCE)
add_subdirectory(${LLAMA_CPP_DIR} llama)
add_executable(tok_dump tok_dump.cpp)
target_link_libraries(tok_dump PRIVATE llama)
