# layer_table: issue 30's per-layer table, forward + backward of each layer type beside libtorch.
# Included from bench/CMakeLists.txt; needs libtorch (FLUXION_WITH_TORCH).
if(Torch_FOUND)
  add_executable(layer_table ${CMAKE_CURRENT_LIST_DIR}/layer_table.cpp)
  target_link_libraries(layer_table PRIVATE fluxion ${TORCH_LIBRARIES})
endif()
