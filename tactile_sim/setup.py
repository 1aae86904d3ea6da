"""tactile_sim: ROS 2 ament_python package that is also pip-installable (library + CLI) without ROS."""

from glob import glob

from setuptools import find_packages, setup

package_name = "tactile_sim"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={package_name: ["data/*", "data/**/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml")),
        ("share/" + package_name + "/rviz", glob("rviz/*.rviz")),
    ],
    python_requires=">=3.10",
    # torch is deliberately unpinned here: install the CPU or CUDA build you want *first*
    # (CI: `pip install torch==2.13.0`), otherwise pip may pull a multi-GB CUDA build.
    install_requires=[
        "torch>=2.1",
        "numpy>=1.24",
        "scipy>=1.10",
        "trimesh>=4.0",
        "warp-lang>=1.5",
        "yourdfpy>=0.0.56",
        "pydantic>=2.5",
        "pyyaml>=6.0",
        # < 0.12: tactile_sim.io.typestore_cache makes message classes and (de)serialisers with this series'
        # Typestore.register, get_msgdef's generators and Msgdef fields (tested against a store rosbags builds)
        "rosbags>=0.11,<0.12",
        "matplotlib>=3.7",
        "tqdm>=4.60",
        "lxml>=4.9",
        "pycollada>=0.7",  # COLLADA (.dae) meshes in URDFs
        # `tactile-sim node --transport dds` (ROS 2 wire without ROS); pinned: tactile_sim.transport.dds_types relies
        # on how this version's DataWriter.write / DataReader.take (de)serialise samples (tested)
        "cyclonedds==11.0.1",
    ],
    extras_require={
        # pytest < 8.4: Jazzy's launch_testing plugin fails to register on pytest 9 and launch_pytest's fixtures
        # fail to collect on 8.4, so in a sourced ROS 2 shell a newer pytest runs no test at all (checked on a
        # source build of Jazzy: 8.3.5 and 7.4.4 pass)
        "test": ["pytest>=7.4,<8.4", "hypothesis>=6.80", "pin>=3.0", "example-robot-data>=4.1", "jsonschema>=4.18"],
    },
    zip_safe=True,
    maintainer="tactile_sim developers",
    maintainer_email="maintainers@users.noreply.a-seed-bb478f83.example",
    description="Robot skin sensor simulation (tactile, proximity, thermal, joint torque, contact) without a physics engine.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "tactile-sim = tactile_sim.cli:main",
            "tactile_sim_node = tactile_sim.ros.node:main",
            "demo_trajectory = tactile_sim.ros.demo_trajectory_node:main",
        ],
    },
)
