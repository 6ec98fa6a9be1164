# Run by `cmake --install` (make install): the systemd unit, the agent's
# configuration and the rule files, with the paths of the prefix given at
# install time (--prefix, make install PREFIX=; DESTDIR is honoured by
# file(INSTALL)).  GW_SOURCE_DIR and GW_BINARY_DIR come from the install
# rules in CMakeLists.txt.
#
#   PREFIX/bin/gpuwatch                          (install(TARGETS))
#   PREFIX/lib/gpuwatch/libgpuwatch_cupti.so     (install(TARGETS), with CUPTI)
#   PREFIX/lib/systemd/system/gpuwatch.service   this unit, ExecStart and
#                                                --config for this prefix
#   SYSCONF/gpuwatch/agent.yaml                  only if absent: an
#                                                operator's edits stay
#   PREFIX/share/gpuwatch/agent.yaml             the shipped default, always
#   PREFIX/share/gpuwatch/rules/{default,fleet}.yml
#
# SYSCONF is /etc for the prefix /usr, PREFIX/etc otherwise (GNU's rule).
set(gw_prefix "${CMAKE_INSTALL_PREFIX}")
if(gw_prefix STREQUAL "/usr")
	set(gw_sysconf "/etc")
else()
	set(gw_sysconf "${gw_prefix}/etc")
endif()

file(READ "${GW_SOURCE_DIR}/deploy/gpuwatch.service" gw_unit)
string(REPLACE "/usr/local/bin/gpuwatch" "${gw_prefix}/bin/gpuwatch"
	gw_unit "${gw_unit}")
string(REPLACE "/etc/gpuwatch/agent.yaml" "${gw_sysconf}/gpuwatch/agent.yaml"
	gw_unit "${gw_unit}")
file(MAKE_DIRECTORY "${GW_BINARY_DIR}/install")
file(WRITE "${GW_BINARY_DIR}/install/gpuwatch.service" "${gw_unit}")
file(INSTALL DESTINATION "${gw_prefix}/lib/systemd/system" TYPE FILE
	FILES "${GW_BINARY_DIR}/install/gpuwatch.service")

file(INSTALL DESTINATION "${gw_prefix}/share/gpuwatch" TYPE FILE
	FILES "${GW_SOURCE_DIR}/deploy/agent.yaml")
file(INSTALL DESTINATION "${gw_prefix}/share/gpuwatch/rules" TYPE FILE
	FILES "${GW_SOURCE_DIR}/deploy/rules/default.yml"
	"${GW_SOURCE_DIR}/deploy/rules/fleet.yml")
if(EXISTS "$ENV{DESTDIR}${gw_sysconf}/gpuwatch/agent.yaml")
	message(STATUS "Kept: $ENV{DESTDIR}${gw_sysconf}/gpuwatch/agent.yaml "
		"(the shipped one is in ${gw_prefix}/share/gpuwatch)")
else()
	file(INSTALL DESTINATION "${gw_sysconf}/gpuwatch" TYPE FILE
		PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
		FILES "${GW_SOURCE_DIR}/deploy/agent.yaml")
endif()
