# `cmake --install` lays out lib/, include/cohort/ and lib/cmake/cohort/ so that another project
# can find_package(cohort) and link cohort::cohort.
include(CMakePackageConfigHelpers)

set(_cohort_targets cohort_core cohort_host cohort)
if(COHORT_HAVE_CUDA)
  list(APPEND _cohort_targets cohort_cuda)
endif()
install(TARGETS ${_cohort_targets} EXPORT cohortTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY core/include/ backends/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(_cfgdir ${CMAKE_INSTALL_LIBDIR}/cmake/cohort)
install(EXPORT cohortTargets NAMESPACE cohort:: DESTINATION ${_cfgdir})
configure_package_config_file(cmake/cohortConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/cohortConfig.cmake INSTALL_DESTINATION ${_cfgdir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/cohortConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cohortConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/cohortConfigVersion.cmake DESTINATION ${_cfgdir})
