# scalar_ad: reverse-mode scalar AD (fx::Real) on a 10^6 dot product and ADBench's GMM objective,
# beside the same generic code run on double. Included from bench/CMakeLists.txt.
add_executable(scalar_ad ${CMAKE_CURRENT_LIST_DIR}/scalar_ad.cpp)
target_link_libraries(scalar_ad PRIVATE fluxion)
